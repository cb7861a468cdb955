"""The Kafka group adapters driving the real broker services (classic group shell, committed
offsets over a temporary data dir, tslog's own coordinator), no sockets. Every request and
answer goes through the Kafka codec at the version named, so the bodies are the shapes a
Kafka client sends and gets."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.handlers import call
from tests.unit.protocol.kafka.kafka_strategies import body
from tslog.broker.security.acl import AclBinding
from tslog.broker.server.kafka.group_apis import GROUP_ADAPTERS, kafka_group_services
from tslog.protocol.errors import ErrorCode
from tslog.protocol.kafka import (
    API_NAMES,
    SUPPORTED,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(30)

KAFKA_ADDRESS = ("127.0.0.1", 19092)
FIND, JOIN, HEARTBEAT, LEAVE, SYNC, COMMIT, FETCH = 10, 11, 12, 13, 14, 8, 9


@dataclass(frozen=True)
class Info:  # the listener's KafkaRequestInfo, duck-typed
    client_id: str | None
    client_host: str
    principal: str


async def kcall(services, api_key, version, body, client="app", principal="User:ANONYMOUS"):
    """One request as the Kafka listener would run it: encoded by a client, decoded, handed
    to the adapter, its answer encoded at the version and decoded as the client reads it."""
    request = decode_request(encode_request(api_key, version, 7, client, body))
    answer = GROUP_ADAPTERS[api_key](services, request.body, version,
                                     Info(request.client_id, "127.0.0.1", principal))
    if inspect.isawaitable(answer):
        answer = await answer
    correlation_id, decoded = decode_response(api_key, version,
                                              encode_response(api_key, version, 7, answer))
    assert correlation_id == 7
    return decoded


def services_of(broker, principal="User:ANONYMOUS"):
    """The adapters' services; with the authorizer on, the group service is judged for a
    connection of ``principal`` (the adapters not on it read ``info.principal``)."""
    broker.classic_groups.start()
    connection = SimpleNamespace(principal=principal, peer="127.0.0.1:5555")
    return kafka_group_services(broker, lambda node: KAFKA_ADDRESS if node == 0 else None,
                                None if broker.gate is None else connection)


async def create_topic(broker, topic="t", partitions=2):
    body = {"topics": [{"topic": topic, "partitions": partitions, "replication_factor": 1,
                        "configs": {}}], "timeout_ms": 1000}
    assert (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]["error_code"] == 0


def join_body(member_id="", group="g", session_ms=10_000, metadata=b"m"):
    return {"group_id": group, "session_timeout_ms": session_ms, "rebalance_timeout_ms": 5_000,
            "member_id": member_id, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": metadata}]}


async def join_two(services):
    """Two members through MEMBER_ID_REQUIRED (JoinGroup v5) into generation 1."""
    first = await kcall(services, JOIN, 5, join_body(), client="a")
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert first["member_id"].startswith("a-")
    a = first["member_id"]
    answer_a = await kcall(services, JOIN, 5, join_body(a, metadata=b"A"), client="a")
    assert (answer_a["generation_id"], answer_a["leader"]) == (1, a)
    second = await kcall(services, JOIN, 5, join_body(), client="b")
    b = second["member_id"]
    join_b = asyncio.ensure_future(kcall(services, JOIN, 5, join_body(b, metadata=b"B"),
                                         client="b"))
    await asyncio.sleep(0.01)
    assert not join_b.done()  # the rebalance waits for a to rejoin
    told = await kcall(services, HEARTBEAT, 3, {"group_id": "g", "generation_id": 1,
                                                "member_id": a})
    assert told["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    join_a = await kcall(services, JOIN, 5, join_body(a, metadata=b"A"), client="a")
    return a, b, (join_a, await join_b)


async def test_find_coordinator_answers_its_kafka_address_at_every_version(broker):
    services = services_of(broker)
    for version in (0, 1, 2, 3):
        answer = await kcall(services, FIND, version, {"key": "g", "key_type": 0})
        assert (answer["error_code"], answer["node_id"], answer["host"], answer["port"]) == (
            0, 0, *KAFKA_ADDRESS)
    batched = await kcall(services, FIND, 4, {"key_type": 0, "coordinator_keys": ["g", "", "h"]})
    assert [(c["key"], c["error_code"], c["port"]) for c in batched["coordinators"]] == [
        ("g", 0, 19092), ("", ErrorCode.INVALID_GROUP_ID, -1), ("h", 0, 19092)]
    transactional = await kcall(services, FIND, 4, {"key_type": 1, "coordinator_keys": ["tx"]})
    assert transactional["coordinators"][0]["error_code"] == ErrorCode.INVALID_REQUEST


async def test_two_members_join_sync_and_get_the_leaders_assignment(broker):
    services = services_of(broker)
    a, b, (join_a, join_b) = await join_two(services)
    assert join_a["generation_id"] == join_b["generation_id"] == 2
    assert join_a["leader"] == join_b["leader"] == a
    assert {(m["member_id"], m["metadata"]) for m in join_a["members"]} == {(a, b"A"), (b, b"B")}
    assert join_b["members"] == []
    follower = asyncio.ensure_future(kcall(services, SYNC, 3, {
        "group_id": "g", "generation_id": 2, "member_id": b, "assignments": []}))
    await asyncio.sleep(0)
    assert not follower.done()  # waits for the leader's assignment
    leader = await kcall(services, SYNC, 3, {"group_id": "g", "generation_id": 2, "member_id": a,
                                             "assignments": [{"member_id": a, "assignment": b"0"},
                                                             {"member_id": b, "assignment": b"1"}]})
    assert (leader["error_code"], leader["assignment"]) == (0, b"0")
    assert (await follower)["assignment"] == b"1"
    assert (await kcall(services, HEARTBEAT, 3, {"group_id": "g", "generation_id": 2,
                                                 "member_id": b}))["error_code"] == 0
    stale = await kcall(services, HEARTBEAT, 3, {"group_id": "g", "generation_id": 1,
                                                 "member_id": b})
    assert stale["error_code"] == ErrorCode.ILLEGAL_GENERATION
    left = await kcall(services, LEAVE, 3, {"group_id": "g", "members": [
        {"member_id": b}, {"member_id": "nobody"}]})
    assert [m["error_code"] for m in left["members"]] == [0, ErrorCode.UNKNOWN_MEMBER_ID]
    rebalancing = await kcall(services, HEARTBEAT, 0, {"group_id": "g", "generation_id": 2,
                                                       "member_id": a})
    assert rebalancing["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = await kcall(services, JOIN, 1, join_body(a, metadata=b"A"), client="a")
    assert (rejoined["generation_id"], [m["member_id"] for m in rejoined["members"]]) == (3, [a])


async def test_a_member_that_stops_heartbeating_is_dropped_and_the_other_rejoins(broker):
    services = services_of(broker)
    a, b, _ = await join_two(services)
    await asyncio.gather(*(kcall(services, SYNC, 3, {
        "group_id": "g", "generation_id": 2, "member_id": member, "assignments": []})
        for member in (b, a)))
    broker.clock.offset_ms += 10_001  # a's and b's sessions (10 s) both ran out ...
    assert (await kcall(services, HEARTBEAT, 3, {"group_id": "g", "generation_id": 2,
                                                 "member_id": a}))["error_code"] == 0
    broker.classic_groups.advance()  # ... but a's heartbeat came first: only b is gone
    described = broker.classic_groups.machine.describe("g")
    assert [m.member_id for m in described.members] == [a]
    assert (await kcall(services, HEARTBEAT, 3, {"group_id": "g", "generation_id": 2,
                                                 "member_id": b}))["error_code"] == (
        ErrorCode.UNKNOWN_MEMBER_ID)
    assert (await kcall(services, HEARTBEAT, 3, {"group_id": "g", "generation_id": 2,
                                                 "member_id": a}))["error_code"] == (
        ErrorCode.REBALANCE_IN_PROGRESS)
    alone = await kcall(services, JOIN, 5, join_body(a, metadata=b"A"), client="a")
    assert (alone["generation_id"], [m["member_id"] for m in alone["members"]]) == (3, [a])


async def test_refusals_inconsistent_protocols_static_members_and_session_bounds(broker):
    services = services_of(broker)
    await create_topic(broker)
    native = await call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": "native", "member_id": "", "member_epoch": 0, "subscribed_topics": ["t"],
        "owned": None})
    assert native["error_code"] == 0
    assert (await kcall(services, JOIN, 0, join_body(group="native")))["error_code"] == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    assert (await kcall(services, JOIN, 5, {**join_body(), "group_instance_id": "i-1"}))[
        "error_code"] == ErrorCode.UNSUPPORTED_VERSION
    assert (await kcall(services, JOIN, 5, join_body(session_ms=10)))["error_code"] == (
        ErrorCode.INVALID_SESSION_TIMEOUT)
    joined = await kcall(services, JOIN, 1, join_body(group="classic"))  # v1: no id round
    assert joined["error_code"] == 0
    refused = await call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": "classic", "member_id": "", "member_epoch": 0, "subscribed_topics": ["t"],
        "owned": None})
    assert refused["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other = await kcall(services, JOIN, 1, {**join_body(group="classic"), "protocol_type": "x"})
    assert other["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def commit_body(generation, member_id, offset=5, partition=0, group="g"):
    return {"group_id": group, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "topics": [{"name": "t", "partitions": [
                {"partition_index": partition, "committed_offset": offset,
                 "committed_metadata": "m"}]}]}


def codes(answer):
    return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]


async def test_offsets_are_tslogs_own_committed_offsets_and_survive_a_restart(make_broker):
    broker = make_broker()
    services = services_of(broker)
    await create_topic(broker)
    a, b, _ = await join_two(services)
    await kcall(services, SYNC, 3, {"group_id": "g", "generation_id": 2, "member_id": a,
                                    "assignments": []})
    assert codes(await kcall(services, COMMIT, 8, commit_body(2, a))) == [0]
    assert codes(await kcall(services, COMMIT, 8, commit_body(1, a, offset=9))) == [
        ErrorCode.ILLEGAL_GENERATION]
    assert codes(await kcall(services, COMMIT, 8, commit_body(-1, "", offset=9))) == [
        ErrorCode.UNKNOWN_MEMBER_ID]  # a plain commit while the group has members
    assert codes(await kcall(services, COMMIT, 2, commit_body(2, a, partition=7))) == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    native = await call(broker, ApiKey.OFFSET_FETCH, {"group_id": "g", "topics": None})
    assert native["topics"] == [{"topic": "t", "partitions": [
        {"partition": 0, "offset": 5, "metadata": "m", "error_code": 0}]}]
    assert codes(await kcall(services, COMMIT, 0, commit_body(-1, "", group="plain",
                                                              offset=3))) == [0]
    broker.close()
    services = services_of(make_broker())
    batched = await kcall(services, FETCH, 8, {"groups": [
        {"group_id": "g", "topics": None},
        {"group_id": "plain", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}]})
    got = {(g["group_id"], p["partition_index"]): (p["committed_offset"], p["metadata"])
           for g in batched["groups"] for t in g["topics"] for p in t["partitions"]}
    assert got == {("g", 0): (5, "m"), ("plain", 0): (3, "m"), ("plain", 1): (-1, "")}
    old = await kcall(services, FETCH, 1, {"group_id": "g", "topics": [
        {"name": "t", "partition_indexes": [0]}]})
    assert old["topics"][0]["partitions"][0]["committed_offset"] == 5
    assert (await kcall(services, FETCH, 5, {"group_id": "", "topics": None}))["error_code"] == (
        ErrorCode.INVALID_GROUP_ID)


async def test_acls_kafkas_mapping_with_the_requests_principal(make_broker):
    broker = make_broker(authorizer_enabled=True)
    await create_topic(broker)
    await create_topic(broker, "secret", 1)
    broker.gate.authorizer.replace([
        AclBinding("User:alice", "group", "literal", "g", "Read", "allow"),
        AclBinding("User:alice", "topic", "literal", "t", "Read", "allow"),
        AclBinding("User:bob", "group", "literal", "g", "Describe", "allow")])
    alice, bob = "User:alice", "User:bob"
    # the connection's principal, which the gate judges the group service's requests for
    of = {who: services_of(broker, who) for who in (alice, bob, "User:eve")}
    assert (await kcall(of[alice], FIND, 2, {"key": "g"}, principal=alice))["error_code"] == 0
    assert (await kcall(of[alice], FIND, 2, {"key": "h"}, principal=alice))["error_code"] == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert (await kcall(of[bob], JOIN, 1, join_body(), principal=bob))["error_code"] == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED)  # Describe is not Read
    assert codes(await kcall(of[alice], COMMIT, 8, commit_body(-1, ""), principal=alice)) == [0]
    secret = {**commit_body(-1, ""), "topics": [{"name": "secret", "partitions": [
        {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]}
    assert codes(await kcall(of[alice], COMMIT, 8, secret, principal=alice)) == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert codes(await kcall(of[bob], COMMIT, 8, commit_body(-1, ""), principal=bob)) == [
        ErrorCode.GROUP_AUTHORIZATION_FAILED]
    await broker.offsets.commit("g", {("secret", 0): (4, "")})  # as an admin could
    everything = await kcall(of[alice], FETCH, 7, {"group_id": "g", "topics": None},
                             principal=alice)
    assert [t["name"] for t in everything["topics"]] == ["t"]  # "secret" is left out
    named = await kcall(of[alice], FETCH, 7, {"group_id": "g", "topics": [
        {"name": "secret", "partition_indexes": [0]}]}, principal=alice)
    assert codes(named) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    assert (await kcall(of["User:eve"], FETCH, 7, {"group_id": "g", "topics": None},
                        principal="User:eve"))["error_code"] == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED)


async def test_a_broker_stopping_answers_waiting_requests_coordinator_not_available(broker):
    services = services_of(broker)
    first = await kcall(services, JOIN, 1, join_body(), client="a")
    waiting = asyncio.ensure_future(kcall(services, SYNC, 1, {
        "group_id": "g", "generation_id": 1, "member_id": "someone-else", "assignments": []}))
    follower_join = asyncio.ensure_future(kcall(services, JOIN, 1, join_body(), client="b"))
    await asyncio.sleep(0.01)
    assert (await waiting)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert not follower_join.done()  # waits for a to rejoin
    await broker.classic_groups.stop()
    assert (await follower_join)["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert first["generation_id"] == 1


@pytest.mark.parametrize("api_key", sorted(GROUP_ADAPTERS))
async def test_any_well_typed_request_gets_an_answer_of_its_version(broker, api_key):
    """Random bodies of every version (the schemas' own types and nullability), one broker
    for all of them so groups and offsets pile up: each answer encodes at its version, and
    nothing raises. A JoinGroup or SyncGroup that waits for other members is left waiting."""
    services = services_of(broker)
    await create_topic(broker)
    name = API_NAMES[api_key] + "Request"
    low, high = SUPPORTED[api_key]
    requests = st.integers(low, high).flatmap(lambda v: st.tuples(st.just(v), body(name, v)))

    @settings(max_examples=25, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(requests)
    def run(request):
        version, sent = request
        pending = asyncio.ensure_future(kcall(services, api_key, version, sent))
        outcomes.append((pending, version))

    outcomes: list = []
    run()
    done, waiting = await asyncio.wait([pending for pending, _ in outcomes], timeout=0.2)
    for pending in done:
        assert isinstance(pending.result(), dict)  # re-raises what the adapter raised
    assert not waiting or api_key in (JOIN, SYNC)
    for pending in waiting:
        pending.cancel()


async def test_list_groups_shows_classic_groups_beside_tslogs(broker):
    services = services_of(broker)
    await join_two(services)
    listed = await call(broker, ApiKey.LIST_GROUPS, {"states": None})
    assert {"group_id": "g", "state": "COMPLETING_REBALANCE", "members": 2} in listed["groups"]
    only_stable = await call(broker, ApiKey.LIST_GROUPS, {"states": ["stable"]})
    assert only_stable["groups"] == []
