"""The group service's APIs (OffsetCommit, OffsetFetch, FindCoordinator, ListGroups, describe,
DeleteGroups, Kafka's OffsetDelete) behind the one gate, through both front doors' adapters
on a real broker (authorizer on, no sockets): the gate judges the group service's typed
request, so a denied group is answered GROUP_AUTHORIZATION_FAILED on either
port in that API's shape, nothing is done for it, the allowed groups are served, the denial
is counted once per request, and both ports give the same answers."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from tests.helpers.handlers import call
from tslog.broker.metrics.definitions import DENIED_REQUESTS
from tslog.broker.security.acl import AclBinding
from tslog.broker.server.kafka.dispatch import TABLE
from tslog.broker.server.kafka.services import services_for
from tslog.protocol.errors import ErrorCode
from tslog.protocol.kafka import decode_request, decode_response, encode_request, encode_response
from tslog.protocol.messages import RESPONSE_SCHEMAS, ApiKey

pytestmark = pytest.mark.timeout(60)
DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
ALICE = "User:alice"
DESCRIBE_GROUPS, OFFSET_DELETE = 15, 47  # Kafka's api keys
KAFKA_PORT = 19092


class Connection:
    """What the gate reads of a connection: who it is and where it comes from."""

    def __init__(self, principal: str, host: str = "127.0.0.1") -> None:
        self.principal = principal
        self.peer = f"{host}:5555"


@pytest.fixture
async def gated(make_broker):
    """Four groups with committed offsets of two topics; alice may read (so describe) and
    delete the "open" groups, and read the topic "open"."""
    broker = make_broker(authorizer_enabled=True, super_users="User:admin",
                         kafka_listen=f"127.0.0.1:{KAFKA_PORT}")
    broker.set_kafka_port(KAFKA_PORT)  # as the listener does once it is bound
    for name in ("open", "secret"):
        created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
            "topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 1000})
        assert created["topics"][0]["error_code"] == 0
    for group in ("open", "open-2", "secret", "secret-2"):
        await broker.offsets.commit(group, {("open", 0): (3, ""), ("secret", 0): (3, "")})
    broker.gate.authorizer.replace([
        AclBinding(ALICE, "group", "prefixed", "open", operation, "allow")
        for operation in ("Read", "Delete")] + [
        AclBinding(ALICE, "topic", "literal", "open", "Read", "allow")])
    return broker


async def settled(result):
    return (await result) if inspect.isawaitable(result) else result


async def native(broker, api_key: ApiKey, body: dict, principal: str = ALICE) -> dict:
    dispatch = broker.gate.bind(broker.dispatch, Connection(principal))
    answer = await settled(dispatch[api_key](body))
    RESPONSE_SCHEMAS[api_key, 0].check(answer)
    return answer


async def kafka(broker, api_key: int, version: int, body: dict, principal: str = ALICE) -> dict:
    """One request as the Kafka listener runs it: encoded by a client, decoded, handed to the
    adapter with the connection's gated services, its answer encoded and decoded again."""
    connection = Connection(principal)
    services = services_for(broker, connection)
    request = decode_request(encode_request(api_key, version, 7, "c", body))
    info = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=principal)
    answer = await settled(TABLE[api_key](services, request.body, version, info))
    _, decoded = decode_response(api_key, version, encode_response(api_key, version, 7, answer))
    return decoded


def denials(api: str, principal: str = ALICE) -> float:
    child = DENIED_REQUESTS.children.get((principal, api))
    return 0 if child is None else child.value


async def test_find_coordinator_refuses_a_denied_group_alike_on_both_ports(gated):
    before = denials("find_coordinator")
    found = await native(gated, ApiKey.FIND_COORDINATOR, {"key_type": "group",
                                                          "keys": ["secret", "open"]})
    codes = {c["key"]: c["error_code"] for c in found["coordinators"]}
    assert codes == {"secret": DENIED, "open": 0}
    assert denials("find_coordinator") == before + 1
    kafka_found = await kafka(gated, ApiKey.FIND_COORDINATOR, 4, {
        "key_type": 0, "coordinator_keys": ["secret", "open"]})
    assert {c["key"]: c["error_code"] for c in kafka_found["coordinators"]} == codes
    assert [(c["node_id"], c["port"]) for c in kafka_found["coordinators"]] == [
        (-1, -1), (0, KAFKA_PORT)]
    assert denials("find_coordinator") == before + 2
    one = await kafka(gated, ApiKey.FIND_COORDINATOR, 3, {"key": "secret", "key_type": 0})
    assert (one["error_code"], one["node_id"]) == (DENIED, -1)
    assert denials("find_coordinator") == before + 3


async def test_describe_refuses_a_denied_group_alike_on_both_ports(gated):
    before = denials("consumer_group_describe"), denials("describe_groups")
    described = await native(gated, ApiKey.CONSUMER_GROUP_DESCRIBE,
                             {"groups": ["secret", "open"]})
    assert [(g["group_id"], g["error_code"], g["state"]) for g in described["groups"]] == [
        ("secret", DENIED, ""), ("open", 0, "EMPTY")]
    kafka_described = await kafka(gated, DESCRIBE_GROUPS, 5, {
        "groups": ["secret", "open"], "include_authorized_operations": False})
    assert [(g["group_id"], g["error_code"], g["group_state"])
            for g in kafka_described["groups"]] == [("secret", DENIED, "Dead"),
                                                    ("open", 0, "Empty")]
    assert (denials("consumer_group_describe"), denials("describe_groups")) == (
        before[0] + 1, before[1] + 1)


async def test_a_denied_delete_changes_nothing_on_either_port(gated):
    before = denials("delete_groups")
    deleted = await native(gated, ApiKey.DELETE_GROUPS, {"groups": ["secret", "open"]})
    assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [
        ("secret", DENIED), ("open", 0)]
    kafka_deleted = await kafka(gated, ApiKey.DELETE_GROUPS, 2,
                                {"groups_names": ["secret-2", "open-2"]})
    assert [(r["group_id"], r["error_code"]) for r in kafka_deleted["results"]] == [
        ("secret-2", DENIED), ("open-2", 0)]
    assert {group: gated.offsets.has_offsets(group)
            for group in ("open", "open-2", "secret", "secret-2")} == {
        "open": False, "open-2": False, "secret": True, "secret-2": True}
    assert denials("delete_groups") == before + 2


async def test_list_groups_hides_what_may_not_be_described_alike_on_both_ports(gated):
    before = denials("list_groups")
    listed = await native(gated, ApiKey.LIST_GROUPS, {"states": None})
    kafka_listed = await kafka(gated, ApiKey.LIST_GROUPS, 4, {"states_filter": []})
    assert [g["group_id"] for g in listed["groups"]] == ["open", "open-2"]
    assert [g["group_id"] for g in kafka_listed["groups"]] == ["open", "open-2"]
    assert denials("list_groups") == before  # a listing that hides is not a denial
    every = ["open", "open-2", "secret", "secret-2"]
    admin = await native(gated, ApiKey.LIST_GROUPS, {"states": None}, "User:admin")
    assert [g["group_id"] for g in admin["groups"]] == every
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "Describe", "allow")])
    kafka_every = await kafka(gated, ApiKey.LIST_GROUPS, 4, {"states_filter": []})
    assert [g["group_id"] for g in kafka_every["groups"]] == every


async def test_without_the_authorizer_the_ports_agree_and_nothing_is_judged(make_broker):
    broker = make_broker()
    await broker.offsets.commit("g", {("t", 0): (3, "")})
    services = services_for(broker, None)
    listed = await settled(broker.dispatch[ApiKey.LIST_GROUPS]({"states": ["empty"]}))
    info = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=ALICE)
    kafka_listed = await settled(TABLE[ApiKey.LIST_GROUPS](
        services, {"states_filter": ["Empty"], "types_filter": ["classic"]}, 5, info))
    assert [g["group_id"] for g in listed["groups"]] == ["g"]
    assert [(g["group_id"], g["group_state"], g["group_type"])
            for g in kafka_listed["groups"]] == [("g", "Empty", "Classic")]


def native_commit(group: str, offset: int) -> dict:
    return {"group_id": group, "member_id": "", "member_epoch": -1, "topics": [
        {"topic": name, "partitions": [{"partition": 0, "offset": offset, "metadata": ""}]}
        for name in ("secret", "open")]}


def kafka_commit(group: str, offset: int) -> dict:
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": name, "partitions": [
                {"partition_index": 0, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": ""}]}
                for name in ("secret", "open")]}


def stored(broker, group: str) -> dict:
    return {topic: offset for (topic, _), (offset, _) in broker.offsets.fetch(group).items()}


async def test_a_commit_stores_only_what_the_gate_allows_alike_on_both_ports(gated):
    before = denials("offset_commit")
    refused = await native(gated, ApiKey.OFFSET_COMMIT, native_commit("secret", 9))
    assert [t["partitions"][0]["error_code"] for t in refused["topics"]] == [DENIED, DENIED]
    kafka_refused = await kafka(gated, ApiKey.OFFSET_COMMIT, 8, kafka_commit("secret-2", 9))
    assert [t["partitions"][0]["error_code"] for t in kafka_refused["topics"]] == [
        DENIED, DENIED]
    assert stored(gated, "secret") == stored(gated, "secret-2") == {"open": 3, "secret": 3}
    assert denials("offset_commit") == before + 2
    partly = await native(gated, ApiKey.OFFSET_COMMIT, native_commit("open", 7))
    kafka_partly = await kafka(gated, ApiKey.OFFSET_COMMIT, 8, kafka_commit("open-2", 7))
    assert [t["partitions"][0]["error_code"] for t in partly["topics"]] == [
        t["partitions"][0]["error_code"] for t in kafka_partly["topics"]] == [TOPIC_DENIED, 0]
    assert stored(gated, "open") == stored(gated, "open-2") == {"open": 7, "secret": 3}
    assert denials("offset_commit") == before + 4


async def test_a_fetch_shows_only_what_the_gate_allows_alike_on_both_ports(gated):
    before = denials("offset_fetch")
    refused = await settled(gated.gate.bind(gated.dispatch, Connection(ALICE))[
        ApiKey.OFFSET_FETCH]({"group_id": "secret", "topics": None}))
    assert refused == {"error_code": DENIED,
                       "error_message": f"{ALICE} is not allowed to Describe group 'secret'"}
    kafka_refused = await kafka(gated, ApiKey.OFFSET_FETCH, 7,
                                {"group_id": "secret", "topics": None, "require_stable": False})
    assert (kafka_refused["error_code"], kafka_refused["topics"]) == (DENIED, [])
    assert denials("offset_fetch") == before + 2
    every = await native(gated, ApiKey.OFFSET_FETCH, {"group_id": "open", "topics": None})
    kafka_every = await kafka(gated, ApiKey.OFFSET_FETCH, 7,
                              {"group_id": "open", "topics": None, "require_stable": False})
    assert [t["topic"] for t in every["topics"]] == [t["name"] for t in kafka_every["topics"]]
    assert [t["topic"] for t in every["topics"]] == ["open"]  # "secret" is left out
    assert denials("offset_fetch") == before + 2  # a listing that hides is not a denial
    named = await native(gated, ApiKey.OFFSET_FETCH, {"group_id": "open", "topics": [
        {"topic": name, "partitions": [0]} for name in ("secret", "open")]})
    kafka_named = await kafka(gated, ApiKey.OFFSET_FETCH, 7, {"group_id": "open", "topics": [
        {"name": name, "partition_indexes": [0]} for name in ("secret", "open")],
        "require_stable": False})
    assert [(p["error_code"], p["offset"]) for t in named["topics"] for p in t["partitions"]] \
        == [(p["error_code"], p["committed_offset"])
            for t in kafka_named["topics"] for p in t["partitions"]] \
        == [(TOPIC_DENIED, -1), (0, 3)]
    assert denials("offset_fetch") == before + 4


async def test_kafkas_offset_delete_deletes_only_what_the_gate_allows(gated):
    before = denials("offset_delete")
    body = {"topics": [{"name": name, "partitions": [{"partition_index": 0}]}
                       for name in ("secret", "open")]}
    refused = await kafka(gated, OFFSET_DELETE, 0, {"group_id": "secret", **body})
    assert (refused["error_code"], refused["topics"]) == (DENIED, [])
    assert stored(gated, "secret") == {"open": 3, "secret": 3}
    assert denials("offset_delete") == before + 1
    partly = await kafka(gated, OFFSET_DELETE, 0, {"group_id": "open", **body})
    assert partly["error_code"] == 0
    assert [t["partitions"][0]["error_code"] for t in partly["topics"]] == [TOPIC_DENIED, 0]
    assert stored(gated, "open") == {"secret": 3}
    assert denials("offset_delete") == before + 2


async def test_the_gate_asks_for_the_connections_host(gated):
    """An ACL naming a host allows the group only to connections from there."""
    gated.gate.authorizer.replace([AclBinding(ALICE, "group", "literal", "open", "Describe",
                                              "allow", host="10.0.0.1")])
    body = {"key_type": "group", "keys": ["open"]}
    codes = []
    for host in ("10.0.0.1", "10.0.0.2"):
        dispatch = gated.gate.bind(gated.dispatch, Connection(ALICE, host))
        codes.append(dispatch[ApiKey.FIND_COORDINATOR](body)["coordinators"][0]["error_code"])
    assert codes == [0, DENIED]


async def test_a_consumer_group_heartbeat_needs_read_on_the_group_and_its_topics(gated):
    """tslog's KIP-848 heartbeat: Read on the group, Describe on each subscribed topic; a
    refused join leaves no member behind."""
    before = denials("consumer_group_heartbeat")

    def join(group: str, topics: list[str]) -> dict:
        return {"group_id": group, "member_id": "", "member_epoch": 0,
                "subscribed_topics": topics, "owned": None}
    for group, topics, code in (("secret", ["open"], DENIED),
                                ("open", ["secret", "open"], TOPIC_DENIED)):
        answer = await native(gated, ApiKey.CONSUMER_GROUP_HEARTBEAT, join(group, topics))
        assert answer["error_code"] == code
        assert gated.group_catalog.describe(group).members == ()
    assert denials("consumer_group_heartbeat") == before + 2
    joined = await native(gated, ApiKey.CONSUMER_GROUP_HEARTBEAT, join("open", ["open"]))
    assert joined["error_code"] == 0
    assert len(gated.group_catalog.describe("open").members) == 1


async def test_kafkas_membership_apis_need_read_on_the_group(gated):
    """JoinGroup, SyncGroup, Heartbeat and LeaveGroup on the Kafka port: a denied group is
    refused before its coordinator is asked, and each refusal counts once."""
    before = [denials(api) for api in ("join_group", "sync_group", "heartbeat", "leave_group")]
    gated.classic_groups.start()
    joined = await kafka(gated, 11, 5, {
        "group_id": "secret", "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})
    synced = await kafka(gated, 14, 3, {"group_id": "secret", "generation_id": 1,
                                        "member_id": "m", "group_instance_id": None,
                                        "assignments": []})
    beat = await kafka(gated, 12, 3, {"group_id": "secret", "generation_id": 1,
                                      "member_id": "m", "group_instance_id": None})
    left = await kafka(gated, 13, 3, {"group_id": "secret", "members": [
        {"member_id": "m", "group_instance_id": None}]})
    assert [answer["error_code"] for answer in (joined, synced, beat, left)] == [DENIED] * 4
    assert not gated.classic_groups.has_members("secret")
    assert [denials(api) for api in ("join_group", "sync_group", "heartbeat", "leave_group")] \
        == [count + 1 for count in before]
