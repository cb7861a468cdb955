"""DeleteRecords, the reassignment APIs, ElectLeaders, InitProducerId, OffsetForLeaderEpoch
and DescribeLogDirs behind the one gate (``GatedPartitionAdmin``), through both front
doors' adapters on a real broker (authorizer on, no sockets).

The gate judges the partition admin service's typed request: a denied topic is answered
TOPIC_AUTHORIZATION_FAILED on either port and its log is left as it was while the allowed
topics are served; a denied cluster operation is refused CLUSTER_AUTHORIZATION_FAILED and
nothing runs; and each denied request is counted once in ``tslog_denied_requests_total``,
whichever port it came in (the Kafka port's were not counted before)."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from tests.helpers.python_calls import count_calls
from tests.helpers.wire import batch
from tslog.broker.metrics.definitions import DENIED_REQUESTS
from tslog.broker.security.acl import AclBinding
from tslog.broker.server.kafka.dispatch import TABLE
from tslog.broker.server.kafka.services import KafkaServices, services_for
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import RESPONSE_SCHEMAS, ApiKey

pytestmark = pytest.mark.timeout(60)
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
ALICE = "User:alice"
INFO = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=ALICE)


class Connection:
    """What the gate reads of a connection: who it is and where it comes from."""

    def __init__(self, principal: str) -> None:
        self.principal = principal
        self.peer = "127.0.0.1:5555"


async def settled(result):
    return (await result) if inspect.isawaitable(result) else result


@pytest.fixture
async def gated(make_broker):
    """Topics "open" and "secret", 3 records each; alice may Delete and Describe "open"
    and Write it (so she may ask for a producer id), nothing on the cluster."""
    broker = make_broker(authorizer_enabled=True, super_users="User:admin")
    admin = native(broker, "User:admin")
    for name in ("open", "secret"):
        created = await settled(admin[ApiKey.CREATE_TOPICS]({"topics": [{
            "topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 1000}))
        assert created["topics"][0]["error_code"] == 0
        await settled(admin[ApiKey.PRODUCE]({"acks": 1, "timeout_ms": 1000, "topics": [
            {"topic": name, "partitions": [{"partition": 0,
                                            "records": batch([b"a", b"b", b"c"])}]}]}))
    broker.gate.authorizer.replace([
        AclBinding(ALICE, "topic", "literal", "open", operation, "allow")
        for operation in ("Delete", "Describe", "Write")])
    return broker


def native(broker, principal: str = ALICE):
    return broker.gate.bind(broker.dispatch, Connection(principal))


def kafka(broker, principal: str = ALICE) -> KafkaServices:
    connection = Connection(principal)
    return services_for(broker, connection)


async def native_call(broker, api_key, body, principal: str = ALICE) -> dict:
    answer = await settled(native(broker, principal)[api_key](body))
    if "topics" in answer or api_key == ApiKey.INIT_PRODUCER_ID:
        RESPONSE_SCHEMAS[api_key, 0].check(answer)
    return answer


async def kafka_call(broker, api_key, body, version: int, principal: str = ALICE) -> dict:
    return await settled(TABLE[api_key](kafka(broker, principal), body, version, INFO))


def denials(api: str) -> float:
    child = DENIED_REQUESTS.children.get((ALICE, api))
    return 0 if child is None else child.value


def log_start(broker, topic: str) -> int:
    return broker.topics.logs[topic, 0].log_start_offset


def cluster_refusal(operation: str) -> dict:
    return {"error_code": CLUSTER_DENIED,
            "error_message": f"{ALICE} is not allowed to {operation} the cluster"}


async def test_native_delete_records_cuts_the_allowed_topic_only(gated):
    before = denials("delete_records")
    answer = await native_call(gated, ApiKey.DELETE_RECORDS, {"timeout_ms": 1000, "topics": [
        {"topic": name, "partitions": [{"partition": 0, "offset": 2}]}
        for name in ("secret", "open")]})
    assert [(t["topic"], t["partitions"][0]["error_code"], t["partitions"][0]["low_watermark"])
            for t in answer["topics"]] == [("secret", TOPIC_DENIED, -1), ("open", 0, 2)]
    assert (log_start(gated, "open"), log_start(gated, "secret")) == (2, 0)
    assert denials("delete_records") == before + 1


async def test_kafka_delete_records_cuts_the_allowed_topic_only(gated):
    before = denials("delete_records")
    answer = await kafka_call(gated, ApiKey.DELETE_RECORDS, {"timeout_ms": 1000, "topics": [
        {"name": name, "partitions": [{"partition_index": 0, "offset": 1}]}
        for name in ("open", "secret")]}, 2)
    assert [(t["name"], t["partitions"][0]["error_code"], t["partitions"][0]["low_watermark"])
            for t in answer["topics"]] == [("open", 0, 1), ("secret", TOPIC_DENIED, -1)]
    assert (log_start(gated, "open"), log_start(gated, "secret")) == (1, 0)
    assert denials("delete_records") == before + 1


async def test_a_reassignment_needs_alter_on_the_cluster_on_both_ports(gated):
    """Refused whole and counted once per request; with Alter granted the same request is
    served (a single broker: to itself is a no-op, elsewhere names no broker)."""
    before = denials("alter_partition_reassignments")
    native_body = {"timeout_ms": 1000, "topics": [
        {"topic": "open", "partitions": [{"partition": 0, "replicas": [0]}]},
        {"topic": "secret", "partitions": [{"partition": 0, "replicas": [7]}]}]}
    assert await native_call(gated, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                             native_body) == cluster_refusal("Alter")
    kafka_body = {"timeout_ms": 1000, "topics": [
        {"name": "open", "partitions": [{"partition_index": 0, "replicas": [0]}]}]}
    refused = await kafka_call(gated, ApiKey.ALTER_PARTITION_REASSIGNMENTS, kafka_body, 0)
    assert (refused["error_code"], refused["responses"][0]["partitions"][0]["error_code"]) == (
        CLUSTER_DENIED, CLUSTER_DENIED)
    assert denials("alter_partition_reassignments") == before + 2
    listed = await native_call(gated, ApiKey.LIST_PARTITION_REASSIGNMENTS, {"topics": None},
                               "User:admin")
    assert listed == {"topics": []}  # nothing started
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "Alter", "allow")])
    served = await native_call(gated, ApiKey.ALTER_PARTITION_REASSIGNMENTS, native_body)
    assert [t["partitions"][0]["error_code"] for t in served["topics"]] == [
        0, ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    kafka_served = await kafka_call(gated, ApiKey.ALTER_PARTITION_REASSIGNMENTS, kafka_body, 0)
    assert kafka_served["error_code"] == 0
    assert denials("alter_partition_reassignments") == before + 2


async def test_listing_reassignments_needs_describe_on_the_cluster(gated):
    before = denials("list_partition_reassignments")
    assert await native_call(gated, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                             {"topics": None}) == cluster_refusal("Describe")
    refused = await kafka_call(gated, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                               {"timeout_ms": 1000, "topics": None}, 0)
    assert (refused["error_code"], refused["topics"]) == (CLUSTER_DENIED, [])
    assert denials("list_partition_reassignments") == before + 2


async def test_elect_leaders_needs_alter_on_the_cluster_on_both_ports(gated):
    before = denials("elect_leaders")
    body = {"timeout_ms": 1000, "topics": [{"topic": "open", "partitions": [0]}]}
    assert await native_call(gated, ApiKey.ELECT_LEADERS, body) == cluster_refusal("Alter")
    kafka_body = {"election_type": 0, "timeout_ms": 1000,
                  "topic_partitions": [{"topic": "open", "partitions": [0]}]}
    refused = await kafka_call(gated, ApiKey.ELECT_LEADERS, kafka_body, 1)
    assert refused["error_code"] == CLUSTER_DENIED
    assert refused["replica_election_results"][0]["partition_result"][0]["error_code"] == \
        CLUSTER_DENIED
    assert denials("elect_leaders") == before + 2
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "Alter", "allow")])
    served = await kafka_call(gated, ApiKey.ELECT_LEADERS, kafka_body, 1)
    assert served["error_code"] == 0
    assert served["replica_election_results"][0]["partition_result"][0]["error_code"] == \
        ErrorCode.ELECTION_NOT_NEEDED
    assert denials("elect_leaders") == before + 2


async def test_describe_log_dirs_needs_describe_on_the_cluster_and_is_counted(gated):
    before = denials("describe_log_dirs")
    refused = await kafka_call(gated, 35, {"topics": None}, 1)
    assert (refused["error_code"], refused["results"]) == (CLUSTER_DENIED, [])
    assert denials("describe_log_dirs") == before + 1
    served = await kafka_call(gated, 35, {"topics": None}, 1, "User:admin")
    assert [t["name"] for t in served["results"][0]["topics"]] == ["open", "secret"]


async def test_init_producer_id_needs_write_somewhere_on_both_ports(gated):
    before = denials("init_producer_id")
    allowed = await native_call(gated, ApiKey.INIT_PRODUCER_ID, {})
    assert allowed["error_code"] == 0 and allowed["producer_id"] >= 0
    gated.gate.authorizer.replace([])
    assert await native_call(gated, ApiKey.INIT_PRODUCER_ID, {}) == {
        "error_code": CLUSTER_DENIED, "producer_id": -1, "producer_epoch": -1}
    refused = await kafka_call(gated, ApiKey.INIT_PRODUCER_ID, {"transactional_id": None}, 2)
    assert (refused["error_code"], refused["producer_id"]) == (CLUSTER_DENIED, -1)
    assert denials("init_producer_id") == before + 2


async def test_offset_for_leader_epoch_judges_followers_and_clients_apart(gated):
    before = denials("offset_for_leader_epoch")
    body = {"replica_id": -1, "topics": [{"topic": name, "partitions": [
        {"partition": 0, "leader_epoch": 0}]} for name in ("open", "secret")]}
    answer = await native_call(gated, ApiKey.OFFSET_FOR_LEADER_EPOCH, body)
    assert [(t["topic"], t["partitions"][0]["error_code"], t["partitions"][0]["end_offset"])
            for t in answer["topics"]] == [("open", 0, 3), ("secret", TOPIC_DENIED, -1)]
    follower = await native_call(gated, ApiKey.OFFSET_FOR_LEADER_EPOCH,
                                 {**body, "replica_id": 1})
    assert follower == cluster_refusal("ClusterAction")
    assert denials("offset_for_leader_epoch") == before + 2


async def test_a_followers_offset_for_leader_epoch_costs_what_the_untyped_handler_did(
        make_broker):
    """Counted, not timed: per partition, the replica lookup, the epoch cache's answer and
    the log end (3 Python calls, as before the typed service), plus a constant per request
    for the service call; the gate adds one authorization per request, none per
    partition."""
    broker = make_broker(authorizer_enabled=True, super_users="User:follower")
    created = await settled(broker.dispatch[ApiKey.CREATE_TOPICS]({"topics": [{
        "topic": "t", "partitions": 64, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000}))
    assert created["topics"][0]["error_code"] == 0

    def body(partitions: int) -> dict:
        return {"replica_id": 1, "topics": [{"topic": "t", "partitions": [
            {"partition": p, "leader_epoch": 0} for p in range(partitions)]}]}
    one, half, whole = body(1), body(32), body(64)
    for dispatch in (broker.dispatch, native(broker, "User:follower")):
        handler = dispatch[ApiKey.OFFSET_FOR_LEADER_EPOCH]
        handler(whole)  # warm: each partition's epoch cache is read on first use
        few, answer = count_calls(lambda: handler(half))
        many, _ = count_calls(lambda: handler(whole))
        assert {p["error_code"] for p in answer["topics"][0]["partitions"]} == {0}
        assert many - few == 32 * 3
    ungated, _ = count_calls(lambda: broker.dispatch[ApiKey.OFFSET_FOR_LEADER_EPOCH](one))
    assert ungated <= 5  # the untyped handler's 4, and the service's own call
