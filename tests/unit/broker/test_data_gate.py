"""Produce, Fetch, ListOffsets and Metadata behind the one gate, through both front doors' adapters on
a real broker (authorizer on, no sockets): the gate judges the data service's typed request,
so a denied topic is answered TOPIC_AUTHORIZATION_FAILED on either port, nothing is written
for it, the allowed topics are served, and the denial is counted once per request."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from tests.helpers.handlers import call
from tests.helpers.wire import batch
from tslog.broker.metrics.definitions import DENIED_REQUESTS
from tslog.broker.security.acl import AclBinding
from tslog.broker.server.kafka.data_apis import DATA_ADAPTERS
from tslog.broker.server.kafka.dispatch import TABLE
from tslog.broker.server.kafka.services import KafkaServices, services_for
from tslog.protocol.errors import ErrorCode
from tslog.protocol.kafka import record_batch
from tslog.protocol.messages import RESPONSE_SCHEMAS, ApiKey

pytestmark = pytest.mark.timeout(60)
DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
ALICE = "User:alice"


class Connection:
    """What the gate reads of a connection: who it is and where it comes from."""

    def __init__(self, principal: str) -> None:
        self.principal = principal
        self.peer = "127.0.0.1:5555"


@pytest.fixture
async def gated(make_broker):
    broker = make_broker(authorizer_enabled=True, super_users="User:admin")
    for name in ("open", "secret"):
        created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
            "topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 1000})
        assert created["topics"][0]["error_code"] == 0
    broker.gate.authorizer.replace([
        AclBinding(ALICE, "topic", "literal", "open", operation, "allow")
        for operation in ("Write", "Read", "Describe")])
    return broker


def native(broker, principal: str = ALICE):
    return broker.gate.bind(broker.dispatch, Connection(principal))


def kafka(broker, principal: str = ALICE) -> KafkaServices:
    connection = Connection(principal)
    return services_for(broker, connection)


async def settled(result):
    return (await result) if inspect.isawaitable(result) else result


def denials(api: str, principal: str = ALICE) -> float:
    child = DENIED_REQUESTS.children.get((principal, api))
    return 0 if child is None else child.value


def log_end(broker, topic: str) -> int:
    return broker.topics.logs[topic, 0].log_end_offset


async def native_call(dispatch, api_key, body):
    answer = await settled(dispatch[api_key](body))
    if "topics" in answer:  # not a whole-request refusal, which any response may be
        RESPONSE_SCHEMAS[api_key, 0].check(dict(answer))  # Metadata's is a PackedAnswer
    return answer


def codes(answer: dict) -> dict:
    return {t["topic"]: t["partitions"][0]["error_code"] for t in answer["topics"]}


async def test_native_produce_writes_the_allowed_topic_only(gated):
    before = denials("produce")
    answer = await native_call(native(gated), ApiKey.PRODUCE, {
        "acks": 1, "timeout_ms": 1000, "topics": [
            {"topic": name, "partitions": [{"partition": 0, "records": batch([b"v"])}]}
            for name in ("secret", "open")]})
    assert codes(answer) == {"secret": DENIED, "open": 0}
    assert (log_end(gated, "open"), log_end(gated, "secret")) == (1, 0)
    assert denials("produce") == before + 1


async def test_kafka_produce_writes_the_allowed_topic_only(gated):
    before = denials("produce")
    records = record_batch.encode_batch([b"v"], None, 5)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": name, "partition_data": [{"index": 0, "records": records}]}
        for name in ("open", "secret")]}
    info = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=ALICE)
    answer = await settled(DATA_ADAPTERS[ApiKey.PRODUCE](kafka(gated), body, 9, info))
    got = {r["name"]: r["partition_responses"][0]["error_code"] for r in answer["responses"]}
    assert got == {"open": 0, "secret": DENIED}
    assert (log_end(gated, "open"), log_end(gated, "secret")) == (1, 0)
    assert denials("produce") == before + 1


async def test_fetch_and_list_offsets_deny_the_same_topics_on_both_ports(gated):
    admin = native(gated, "User:admin")
    for name in ("open", "secret"):
        await native_call(admin, ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 1000, "topics": [
            {"topic": name, "partitions": [{"partition": 0, "records": batch([b"v"])}]}]})
    fetched = await native_call(native(gated), ApiKey.FETCH, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "topics": [{"topic": name, "partitions": [
            {"partition": 0, "fetch_offset": 0, "max_bytes": 1 << 20}]}
            for name in ("open", "secret")]})
    assert codes(fetched) == {"open": 0, "secret": DENIED}
    assert [t["partitions"][0]["records"] != b"" for t in fetched["topics"]] == [True, False]
    info = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=ALICE)
    kafka_fetched = await settled(DATA_ADAPTERS[ApiKey.FETCH](kafka(gated), {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "topics": [{"topic": name, "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}
            for name in ("open", "secret")]}, 11, info))
    assert {r["topic"]: r["partitions"][0]["error_code"]
            for r in kafka_fetched["responses"]} == {"open": 0, "secret": DENIED}
    listed = await native_call(native(gated), ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "timestamp_type": "append", "topics": [
            {"topic": name, "partitions": [{"partition": 0, "timestamp": -1}]}
            for name in ("open", "secret")]})
    assert codes(listed) == {"open": 0, "secret": DENIED}
    kafka_listed = await settled(DATA_ADAPTERS[ApiKey.LIST_OFFSETS](kafka(gated), {
        "replica_id": -1, "isolation_level": 0, "topics": [
            {"name": name, "partitions": [{"partition_index": 0, "timestamp": -1}]}
            for name in ("open", "secret")]}, 5, info))
    assert {t["name"]: (t["partitions"][0]["error_code"], t["partitions"][0]["offset"])
            for t in kafka_listed["topics"]} == {"open": (0, 1), "secret": (DENIED, -1)}


async def test_a_followers_fetch_needs_cluster_action(gated):
    body = {"replica_id": 1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": "open", "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": 1 << 20}]}]}
    before = denials("fetch")
    refused = await native_call(native(gated), ApiKey.FETCH, body)
    assert refused["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert denials("fetch") == before + 1
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "ClusterAction", "allow")])
    served = await native_call(native(gated), ApiKey.FETCH, body)
    assert codes(served) == {"open": 0}


async def test_a_super_user_is_served_everything(gated):
    answer = await native_call(native(gated, "User:admin"), ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "timestamp_type": "append", "topics": [
            {"topic": name, "partitions": [{"partition": 0, "timestamp": -1}]}
            for name in ("open", "secret")]})
    assert codes(answer) == {"open": 0, "secret": 0}


async def test_metadata_hides_what_may_not_be_described_and_refuses_it_by_name(gated):
    """On both ports: a listing shows only describable topics (not counted as a denial); a
    topic asked by name is refused whether it exists or not, so a name tells nothing."""
    before = denials("metadata")
    listed = await native_call(native(gated), ApiKey.METADATA, {"topics": None})
    assert [t["topic"] for t in listed["topics"]] == ["open"]
    assert denials("metadata") == before
    named = await native_call(native(gated), ApiKey.METADATA,
                              {"topics": ["open", "secret", "nope"]})
    assert [(t["topic"], t["error_code"]) for t in named["topics"]] == [
        ("open", 0), ("secret", DENIED), ("nope", DENIED)]
    assert [p["leader"] for p in named["topics"][0]["partitions"]] == [0]
    assert denials("metadata") == before + 1
    info = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=ALICE)
    adapter = TABLE[ApiKey.METADATA]
    kafka_listed = await settled(adapter(kafka(gated), {"topics": None}, 9, info))
    assert [t["name"] for t in kafka_listed["topics"]] == ["open"]
    kafka_named = await settled(adapter(kafka(gated), {"topics": [
        {"name": name} for name in ("open", "secret", "nope")],
        "allow_auto_topic_creation": False}, 9, info))
    assert [(t["name"], t["error_code"]) for t in kafka_named["topics"]] == [
        ("open", 0), ("secret", DENIED), ("nope", DENIED)]
    assert [p["leader_id"] for p in kafka_named["topics"][0]["partitions"]] == [0]
