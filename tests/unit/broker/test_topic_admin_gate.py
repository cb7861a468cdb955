"""CreateTopics, DeleteTopics, CreatePartitions and Describe/AlterConfigs behind the one gate,
through both front doors' adapters on a real broker (authorizer on, no sockets), and the
Kafka port's IncrementalAlterConfigs and Metadata's creation of missing topics: the gate
judges the topic admin service's typed request, so a denied topic is answered
TOPIC_AUTHORIZATION_FAILED on either port (a broker resource CLUSTER_AUTHORIZATION_FAILED),
nothing changes for it, the allowed rest is served, and the denial is counted once."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from tests.helpers.handlers import call
from tslog.broker.metrics.definitions import DENIED_REQUESTS
from tslog.broker.security.acl import AclBinding
from tslog.broker.server.kafka.dispatch import TABLE
from tslog.broker.server.kafka.replication_rates import LEADER_RATE
from tslog.broker.server.kafka.services import KafkaServices, services_for
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import RESPONSE_SCHEMAS, ApiKey

pytestmark = pytest.mark.timeout(60)
DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
ALICE = "User:alice"
INFO = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal=ALICE)
INCREMENTAL_ALTER_CONFIGS = 44


class Connection:
    """What the gate reads of a connection: who it is and where it comes from."""

    def __init__(self, principal: str) -> None:
        self.principal = principal
        self.peer = "127.0.0.1:5555"


@pytest.fixture
async def gated(make_broker):
    """Topics "open" and "secret"; alice may do everything to "open" and "fresh" only."""
    broker = make_broker(authorizer_enabled=True, super_users="User:admin")
    for name in ("open", "secret"):
        created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
            "topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 1000})
        assert created["topics"][0]["error_code"] == 0
    broker.gate.authorizer.replace([
        AclBinding(ALICE, "topic", "literal", name, operation, "allow")
        for name in ("open", "fresh")
        for operation in ("Create", "Delete", "Alter", "AlterConfigs", "Describe")])
    return broker


def native(broker, principal: str = ALICE):
    return broker.gate.bind(broker.dispatch, Connection(principal))


def kafka(broker, principal: str = ALICE) -> KafkaServices:
    connection = Connection(principal)
    return services_for(broker, connection)


async def settled(result):
    return (await result) if inspect.isawaitable(result) else result


async def native_call(broker, api_key, body):
    answer = await settled(native(broker)[api_key](body))
    RESPONSE_SCHEMAS[api_key, 0].check(answer)
    return answer


async def kafka_call(broker, api_key, body, version):
    return await settled(TABLE[int(api_key)](kafka(broker), body, version, INFO))


def denials(api: str, principal: str = ALICE) -> float:
    child = DENIED_REQUESTS.children.get((principal, api))
    return 0 if child is None else child.value


def partitions(broker, name: str) -> int:
    return broker.topics.topics[name].partitions


def retention(broker, name: str) -> str:
    return broker.topics.topics[name].configs.get("retention.ms", "default")


def by_name(entries, name_key="topic", code_key="error_code") -> dict:
    return {entry[name_key]: entry[code_key] for entry in entries}


# ------------------------------------------------------------------------- create topics


async def test_native_create_topics_creates_the_allowed_topic_only(gated):
    before = denials("create_topics")
    answer = await native_call(gated, ApiKey.CREATE_TOPICS, {"timeout_ms": 1000, "topics": [
        {"topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}
        for name in ("hidden", "fresh")]})
    assert by_name(answer["topics"]) == {"hidden": DENIED, "fresh": 0}
    assert answer["topics"][0]["error_message"] == \
        "User:alice is not allowed to Create topic 'hidden'"
    assert "hidden" not in gated.topics.topics and "fresh" in gated.topics.topics
    assert denials("create_topics") == before + 1


async def test_kafka_create_topics_creates_the_allowed_topic_only(gated):
    before = denials("create_topics")
    answer = await kafka_call(gated, ApiKey.CREATE_TOPICS, {
        "timeout_ms": 1000, "validate_only": False, "topics": [
            {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [],
             "configs": []} for name in ("fresh", "hidden")]}, 5)
    assert by_name(answer["topics"], "name") == {"fresh": 0, "hidden": DENIED}
    assert [t["num_partitions"] for t in answer["topics"]] == [2, -1]
    assert "hidden" not in gated.topics.topics and partitions(gated, "fresh") == 2
    assert denials("create_topics") == before + 1


async def test_create_on_the_cluster_allows_every_topic_uncounted(gated):
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "Create", "allow")])
    before = denials("create_topics")
    answer = await native_call(gated, ApiKey.CREATE_TOPICS, {"timeout_ms": 1000, "topics": [
        {"topic": name, "partitions": 1, "replication_factor": 1, "configs": {}}
        for name in ("hidden", "fresh")]})
    assert by_name(answer["topics"]) == {"hidden": 0, "fresh": 0}
    assert denials("create_topics") == before


async def test_kafka_metadata_creates_only_what_it_may(make_broker):
    """auto.create.topics.enable: a missing topic is created through the same gate (Create),
    so a denied one stays missing, is refused by name, and counts as a CreateTopics denial."""
    broker = make_broker(authorizer_enabled=True, super_users="User:admin",
                         auto_create_topics_enable=True)
    broker.gate.authorizer.replace([
        AclBinding(ALICE, "topic", "literal", "fresh", operation, "allow")
        for operation in ("Create", "Describe")])
    before = denials("create_topics")
    answer = await kafka_call(broker, ApiKey.METADATA, {
        "topics": [{"name": "fresh"}, {"name": "hidden"}],
        "allow_auto_topic_creation": True}, 9)
    assert by_name(answer["topics"], "name") == {"fresh": 0, "hidden": DENIED}
    assert "fresh" in broker.topics.topics and "hidden" not in broker.topics.topics
    assert denials("create_topics") == before + 1


# ------------------------------------------------------------------ delete, add partitions


async def test_delete_topics_deletes_the_allowed_topic_only_on_both_ports(gated):
    before = denials("delete_topics")
    answer = await native_call(gated, ApiKey.DELETE_TOPICS,
                               {"topics": ["secret", "open"], "timeout_ms": 1000})
    assert by_name(answer["topics"]) == {"secret": DENIED, "open": 0}
    assert set(gated.topics.topics) == {"secret"}
    assert denials("delete_topics") == before + 1
    await native_call(gated, ApiKey.CREATE_TOPICS, {"timeout_ms": 1000, "topics": [
        {"topic": "fresh", "partitions": 1, "replication_factor": 1, "configs": {}}]})
    kafka_answer = await kafka_call(gated, ApiKey.DELETE_TOPICS, {
        "topic_names": ["fresh", "secret"], "timeout_ms": 1000}, 4)
    assert by_name(kafka_answer["responses"], "name") == {"fresh": 0, "secret": DENIED}
    assert set(gated.topics.topics) == {"secret"}
    assert denials("delete_topics") == before + 2


async def test_create_partitions_grows_the_allowed_topic_only_on_both_ports(gated):
    before = denials("create_partitions")
    answer = await native_call(gated, ApiKey.CREATE_PARTITIONS, {
        "validate_only": False, "topics": [{"topic": name, "count": 2}
                                           for name in ("open", "secret")]})
    assert by_name(answer["topics"]) == {"open": 0, "secret": DENIED}
    assert answer["topics"][1]["error_message"] == \
        "User:alice is not allowed to Alter topic 'secret'"
    assert (partitions(gated, "open"), partitions(gated, "secret")) == (2, 1)
    assert denials("create_partitions") == before + 1
    kafka_answer = await kafka_call(gated, ApiKey.CREATE_PARTITIONS, {
        "timeout_ms": 1000, "validate_only": False, "topics": [
            {"name": name, "count": 3, "assignments": None} for name in ("secret", "open")]},
        1)
    assert by_name(kafka_answer["results"], "name") == {"secret": DENIED, "open": 0}
    assert (partitions(gated, "open"), partitions(gated, "secret")) == (3, 1)
    assert denials("create_partitions") == before + 2


# -------------------------------------------------------------------------------- configs


async def test_alter_configs_changes_the_allowed_topic_only_on_both_ports(gated):
    before = denials("alter_configs")
    answer = await native_call(gated, ApiKey.ALTER_CONFIGS, {
        "validate_only": False, "resources": [
            {"type": "topic", "name": name, "configs": {"retention.ms": "1000"}}
            for name in ("secret", "open")]})
    assert by_name(answer["resources"], "name") == {"secret": DENIED, "open": 0}
    assert (retention(gated, "open"), retention(gated, "secret")) == ("1000", "default")
    assert denials("alter_configs") == before + 1
    kafka_answer = await kafka_call(gated, INCREMENTAL_ALTER_CONFIGS, {
        "validate_only": False, "resources": [
            {"resource_type": 2, "resource_name": name, "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "2000"}]}
            for name in ("open", "secret")]}, 0)
    assert by_name(kafka_answer["responses"], "resource_name") == {"open": 0, "secret": DENIED}
    assert (retention(gated, "open"), retention(gated, "secret")) == ("2000", "default")
    assert denials("alter_configs") == before + 2


async def test_a_brokers_rates_need_alter_configs_on_the_cluster(gated):
    """The Kafka port's IncrementalAlterConfigs of a broker was checked by its adapter and
    not counted; now the gate judges it, counts it, and a denial sets no rate."""
    body = {"validate_only": False, "resources": [
        {"resource_type": 4, "resource_name": str(gated.config.node_id), "configs": [
            {"name": LEADER_RATE, "config_operation": 0, "value": "1000"}]}]}
    before = denials("alter_configs")
    refused = await kafka_call(gated, INCREMENTAL_ALTER_CONFIGS, body, 0)
    assert [(r["error_code"], r["error_message"]) for r in refused["responses"]] == [
        (CLUSTER_DENIED, "User:alice is not allowed to AlterConfigs the cluster")]
    assert gated.rates.entries() == []
    assert denials("alter_configs") == before + 1
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "AlterConfigs", "allow")])
    served = await kafka_call(gated, INCREMENTAL_ALTER_CONFIGS, body, 0)
    assert [r["error_code"] for r in served["responses"]] == [0]
    assert [(e.name, e.value) for e in gated.rates.entries()] == [(LEADER_RATE, "1000")]


async def test_a_denied_broker_change_is_refused_before_its_entries_are_judged(gated):
    """A bad entry from a denied principal is answered as a denial: it learns nothing."""
    body = {"validate_only": False, "resources": [
        {"resource_type": 4, "resource_name": str(gated.config.node_id), "configs": [
            {"name": "no.such.setting", "config_operation": 0, "value": "1"}]}]}
    refused = await kafka_call(gated, INCREMENTAL_ALTER_CONFIGS, body, 0)
    assert [r["error_code"] for r in refused["responses"]] == [CLUSTER_DENIED]
    gated.gate.authorizer.replace([
        AclBinding(ALICE, "cluster", "literal", "kafka-cluster", "AlterConfigs", "allow")])
    invalid = await kafka_call(gated, INCREMENTAL_ALTER_CONFIGS, body, 0)
    assert [r["error_code"] for r in invalid["responses"]] == [ErrorCode.INVALID_CONFIG]


async def test_describe_configs_answers_in_the_request_order_on_both_ports(gated):
    """A denied topic or broker is refused in its own place, so each port's answer names
    the resource it describes (configs only for what may be described)."""
    before = denials("describe_configs")
    answer = await native_call(gated, ApiKey.DESCRIBE_CONFIGS, {"resources": [
        {"type": "topic", "name": "secret"}, {"type": "broker", "name": "0"},
        {"type": "topic", "name": "open"}]})
    assert [(r["name"], r["error_code"], bool(r["configs"])) for r in answer["resources"]] == [
        ("secret", DENIED, False), ("0", CLUSTER_DENIED, False), ("open", 0, True)]
    assert denials("describe_configs") == before + 1
    kafka_answer = await kafka_call(gated, ApiKey.DESCRIBE_CONFIGS, {
        "include_synonyms": False, "include_documentation": False, "resources": [
            {"resource_type": 2, "resource_name": name, "configuration_keys": None}
            for name in ("secret", "open")]}, 4)
    assert [(r["resource_name"], r["error_code"], bool(r["configs"]))
            for r in kafka_answer["results"]] == [("secret", DENIED, False), ("open", 0, True)]
    assert denials("describe_configs") == before + 2
