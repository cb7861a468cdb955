"""The reassignment, election, cluster and throttle APIs on the Kafka listener at the byte
level, on one broker (every run; ``test_kafka_reassign_tools.py`` drives them with Kafka's
own tools on three): bad input gets Kafka's typed errors and changes nothing, the
replication rate set at run time shows in DescribeConfigs until deleted, and with the
authorizer on and nothing granted every one of them is refused with
CLUSTER_AUTHORIZATION_FAILED (or TOPIC_AUTHORIZATION_FAILED for a topic's configs), leaving
the topic's configs as they were."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from tests.helpers.broker_process import free_port
from tslog.client import Admin
from tslog.protocol.kafka import decode_response, encode_request

ELECT, ALTER_CONFIGS, REASSIGN, LIST_REASSIGNMENTS = 43, 44, 45, 46
DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS, DESCRIBE_CLUSTER, API_VERSIONS = 32, 35, 60, 18
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE, APPEND = 0, 1, 2
INVALID_REQUEST, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG = 42, 39, 40
CLUSTER_DENIED, TOPIC_DENIED, MISMATCHED_ENDPOINT_TYPE = 31, 29, 114
LEADER_RATE = "leader.replication.throttled.rate"


class Wire:
    def __init__(self, port: int) -> None:
        self.sock = _connect(port)
        self.correlation = 0

    def ask(self, api_key: int, version: int, body: dict) -> dict:
        self.correlation += 1
        request = encode_request(api_key, version, self.correlation, "reassign-wire", body)
        self.sock.sendall(struct.pack(">I", len(request)) + request)
        size = struct.unpack(">I", self.sock.recv(4, socket.MSG_WAITALL))[0]
        got, answer = decode_response(api_key, version,
                                      self.sock.recv(size, socket.MSG_WAITALL))
        assert got == self.correlation
        return answer

    def alter(self, kind: int, name: str, *configs: tuple[str, int, str | None],
              validate_only: bool = False) -> tuple[int, str | None]:
        answer = self.ask(ALTER_CONFIGS, 1, {"validate_only": validate_only, "resources": [
            {"resource_type": kind, "resource_name": name, "configs": [
                {"name": n, "config_operation": op, "value": v} for n, op, v in configs]}]})
        [result] = answer["responses"]
        return result["error_code"], result["error_message"]

    def broker_rates(self, node: str = "0") -> dict[str, str]:
        answer = self.ask(DESCRIBE_CONFIGS, 4, {"include_synonyms": False,
                                                "include_documentation": False,
                                                "resources": [{"resource_type": BROKER_RESOURCE,
                                                               "resource_name": node,
                                                               "configuration_keys": None}]})
        return {c["name"]: (c["value"], c["config_source"])
                for c in answer["results"][0]["configs"] if "throttled" in c["name"]}

    def close(self) -> None:
        self.sock.close()


def _connect(port: int, attempts: int = 300) -> socket.socket:
    """A connection to the Kafka listener, which a restarted broker binds a little after its
    native port (the readiness the broker fixtures wait for)."""
    for _ in range(attempts - 1):
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except ConnectionRefusedError:
            time.sleep(0.1)
    return socket.create_connection(("127.0.0.1", port), timeout=10)


@pytest.fixture
def wire(kafka_broker):
    connection = Wire(kafka_broker.kafka_port)
    yield connection
    connection.close()


def _reassign(wire: Wire, topic: str, replicas) -> dict:
    return wire.ask(REASSIGN, 0, {"timeout_ms": 1000, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "replicas": replicas}]}]})


def test_reassignments_and_elections_refuse_what_tslog_cannot_do(kafka_broker, wire):
    topic = kafka_broker.topic("reassigned")
    answer = _reassign(wire, topic, [-1])
    partition = answer["responses"][0]["partitions"][0]
    assert (answer["error_code"], partition["error_code"]) == (0, INVALID_REPLICA_ASSIGNMENT)
    # A single broker: any other broker is not one it knows.
    partition = _reassign(wire, topic, [7])["responses"][0]["partitions"][0]
    assert partition["error_code"] == INVALID_REPLICA_ASSIGNMENT
    assert wire.ask(LIST_REASSIGNMENTS, 0, {"timeout_ms": 1000, "topics": None})["topics"] == []
    unclean = wire.ask(ELECT, 2, {"election_type": 1, "timeout_ms": 1000, "topic_partitions": [
        {"topic": topic, "partitions": [0]}]})
    result = unclean["replica_election_results"][0]["partition_result"][0]
    assert result["error_code"] == INVALID_REQUEST and "preferred" in result["error_message"]
    preferred = wire.ask(ELECT, 2, {"election_type": 0, "timeout_ms": 1000,
                                    "topic_partitions": [{"topic": topic, "partitions": [0]}]})
    assert preferred["replica_election_results"][0]["partition_result"][0]["error_code"] == 84
    with Admin(kafka_broker.bootstrap) as admin:
        assert [p.replicas for p in admin.describe_topic(topic).partitions] == [[0]]


def test_the_replication_rate_is_set_checked_and_cleared(kafka_broker, wire):
    assert wire.broker_rates() == {}
    assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, SET, "fast"))[0] == INVALID_CONFIG
    assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, APPEND, "1"))[0] == INVALID_CONFIG
    assert wire.alter(BROKER_RESOURCE, "0", ("num.io.threads", SET, "4"))[0] == INVALID_CONFIG
    assert wire.alter(BROKER_RESOURCE, "7", (LEADER_RATE, SET, "1000"))[0] == INVALID_REQUEST
    assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, SET, "1000"),
                      validate_only=True) == (0, None)
    # One bad entry: nothing of the resource changes.
    assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, SET, "1000"),
                      ("follower.replication.throttled.rate", SET, "-5"))[0] == INVALID_CONFIG
    assert wire.broker_rates() == {}
    assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, SET, "1000")) == (0, None)
    assert wire.broker_rates() == {LEADER_RATE: ("1000", 2)}  # DYNAMIC_BROKER_CONFIG
    assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, DELETE, None),
                      ("replica.alter.log.dirs.io.max.bytes.per.second", DELETE, None)) == \
        (0, None)
    assert wire.broker_rates() == {}


def test_topic_throttled_replicas_are_checked_and_topic_configs_altered(kafka_broker, wire):
    topic = kafka_broker.topic("throttled")
    throttled = "leader.replication.throttled.replicas"
    assert wire.alter(TOPIC_RESOURCE, topic, (throttled, SET, "0:a"))[0] == INVALID_CONFIG
    assert wire.alter(TOPIC_RESOURCE, topic, (throttled, SET, "0:0,0:1")) == (0, None)
    assert wire.alter(TOPIC_RESOURCE, "no-such-topic", (throttled, SET, "*"))[0] == 3
    assert wire.alter(TOPIC_RESOURCE, topic, ("retention.ms", SET, "60000")) == (0, None)
    with Admin(kafka_broker.bootstrap) as admin:
        overrides = {e.name: e.value for e in admin.describe_configs(topic).values()
                     if e.source == "topic"}
    assert overrides == {"retention.ms": "60000"}
    assert wire.alter(TOPIC_RESOURCE, topic, ("retention.ms", DELETE, None)) == (0, None)


def test_describe_cluster_and_log_dirs_name_this_broker(kafka_broker, wire):
    topic = kafka_broker.topic("described")
    cluster = wire.ask(DESCRIBE_CLUSTER, 2, {"include_cluster_authorized_operations": False,
                                             "endpoint_type": 1,
                                             "include_fenced_brokers": False})
    assert cluster["error_code"] == 0 and cluster["controller_id"] == 0
    assert [(b["broker_id"], b["port"]) for b in cluster["brokers"]] == \
        [(0, kafka_broker.kafka_port)]
    controllers = wire.ask(DESCRIBE_CLUSTER, 1, {"include_cluster_authorized_operations": False,
                                                 "endpoint_type": 2})
    assert controllers["error_code"] == MISMATCHED_ENDPOINT_TYPE
    dirs = wire.ask(DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": topic, "partitions": [0]}]})
    [result] = dirs["results"]
    assert result["log_dir"] == str(kafka_broker.process.data_dir.resolve())
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in result["topics"]] == [(topic, [0])]
    assert wire.ask(API_VERSIONS, 3, {"client_software_name": "t",
                                      "client_software_version": "1"})["error_code"] == 0


@pytest.mark.slow  # two broker starts
def test_with_the_authorizer_on_nothing_granted_is_refused_and_nothing_changes(
        broker_factory):
    port = free_port()
    broker = broker_factory(args=["--kafka-listen", f"127.0.0.1:{port}"])
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("guarded")
    broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true"})
    wire = Wire(port)
    try:
        answer = _reassign(wire, "guarded", [0])
        assert answer["error_code"] == CLUSTER_DENIED
        assert answer["responses"][0]["partitions"][0]["error_code"] == CLUSTER_DENIED
        cancel = _reassign(wire, "guarded", None)
        assert cancel["error_code"] == CLUSTER_DENIED
        listed = wire.ask(LIST_REASSIGNMENTS, 0, {"timeout_ms": 1000, "topics": None})
        assert listed["error_code"] == CLUSTER_DENIED
        elected = wire.ask(ELECT, 2, {"election_type": 0, "timeout_ms": 1000,
                                      "topic_partitions": [{"topic": "guarded",
                                                            "partitions": [0]}]})
        assert elected["error_code"] == CLUSTER_DENIED
        assert elected["replica_election_results"][0]["partition_result"][0][
            "error_code"] == CLUSTER_DENIED
        assert wire.alter(BROKER_RESOURCE, "0", (LEADER_RATE, SET, "1"))[0] == CLUSTER_DENIED
        assert wire.alter(TOPIC_RESOURCE, "guarded", ("retention.ms", SET, "1000"))[0] == \
            TOPIC_DENIED
        assert wire.alter(TOPIC_RESOURCE, "guarded",
                          ("leader.replication.throttled.replicas", SET, "*"))[0] == TOPIC_DENIED
        dirs = wire.ask(DESCRIBE_LOG_DIRS, 4, {"topics": None})
        assert (dirs["error_code"], dirs["results"]) == (CLUSTER_DENIED, [])
    finally:
        wire.close()
    broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "false"})
    with Admin(broker.bootstrap) as admin:
        configs = admin.describe_configs("guarded").values()
    assert not [e for e in configs if e.source == "topic"]
