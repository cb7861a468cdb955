"""OffsetDelete on the Kafka port (kafka-python's ``delete_group_offsets``, the request
``kafka-consumer-groups --delete-offsets`` sends): the named partitions' committed offsets
go, the others stay, on a single broker and in a cluster (etcd); a denied request changes
nothing. ``tests/kafka_reference/test_tools_offsets.py`` compares the tool's output with
Apache Kafka's."""

from __future__ import annotations

import socket
import struct

import pytest
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import GroupIdNotFoundError, NoError, UnknownTopicOrPartitionError
from kafka.structs import OffsetAndMetadata

from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tslog.client import Admin, Consumer, TopicPartition as NativePartition
from tslog.protocol.kafka import decode_response, encode_request

GROUP_AUTHORIZATION_FAILED = 30


def _commit(admin: KafkaAdminClient, group: str, topic: str, offsets: dict) -> None:
    admin.alter_group_offsets(group, {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                                      for p, o in offsets.items()})


def _committed(native: str, group: str, topic: str, partitions: int) -> dict:
    with Consumer(native, group_id=group) as consumer:
        found = {p: consumer.committed(NativePartition(topic, p)) for p in range(partitions)}
    return {p: o for p, o in found.items() if o is not None}


def test_delete_some_partitions_offsets_keep_the_others(kafka_broker):
    topic, group = kafka_broker.topic("od", partitions=3), "od-group"
    with KafkaAdminClient(bootstrap_servers=kafka_broker.kafka) as admin:
        _commit(admin, group, topic, {0: 5, 1: 6, 2: 7})
        result = admin.delete_group_offsets(group, [TopicPartition(topic, 0),
                                                    TopicPartition(topic, 2),
                                                    TopicPartition(topic, 9)])
        assert result == {TopicPartition(topic, 0): NoError, TopicPartition(topic, 2): NoError,
                          TopicPartition(topic, 9): UnknownTopicOrPartitionError}
        assert _committed(kafka_broker.bootstrap, group, topic, 3) == {1: 6}
        with pytest.raises(GroupIdNotFoundError):
            admin.delete_group_offsets("od-nobody", [TopicPartition(topic, 0)])
        admin.delete_group_offsets(group, [TopicPartition(topic, 1)])
    assert _committed(kafka_broker.bootstrap, group, topic, 3) == {}


def _raw_offset_delete(port: int, group: str, topic: str) -> dict:
    request = encode_request(47, 0, 1, "od-test", {"group_id": group, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0}]}]})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">I", len(request)) + request)
        size = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(47, 0, sock.recv(size, socket.MSG_WAITALL))[1]


def test_a_denied_offset_delete_is_refused_and_changes_nothing(broker_factory):
    """ACLs on and nothing granted: GROUP_AUTHORIZATION_FAILED for the whole request (Kafka
    asks for Delete on the group first), and the offset is still there afterwards."""
    port = free_port()
    broker = broker_factory(args=["--kafka-listen", f"127.0.0.1:{port}"])
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("guarded")
    with KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}") as admin:
        _commit(admin, "kept", "guarded", {0: 4})
    broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true"})
    answer = _raw_offset_delete(port, "kept", "guarded")
    assert (answer["error_code"], answer["topics"]) == (GROUP_AUTHORIZATION_FAILED, [])
    broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "false"})
    assert _committed(broker.bootstrap, "kept", "guarded", 1) == {0: 4}


@pytest.mark.slow  # an etcd and two brokers
def test_in_a_cluster_the_deletion_is_in_etcd(tmp_path, etcd):
    """Committed offsets live in etcd in a cluster: the deleted partition is still gone
    after the coordinator restarts and reloads them, the other is still there."""
    kafka_ports = [free_port(), free_port()]
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 2000,
        "kafka_listen": f"127.0.0.1:{kafka_ports[node]}"}) for node in range(2)]
    try:
        for broker in brokers:
            broker.launch()
        wait_cluster_ready(brokers)
        with Admin(brokers[0].bootstrap) as admin:
            admin.create_topic("spread", partitions=2, replication_factor=2)
        bootstrap = ",".join(f"127.0.0.1:{port}" for port in kafka_ports)
        with KafkaAdminClient(bootstrap_servers=bootstrap) as admin:
            _commit(admin, "g", "spread", {0: 3, 1: 8})
            assert admin.delete_group_offsets("g", [TopicPartition("spread", 0)]) == \
                {TopicPartition("spread", 0): NoError}
        for broker in brokers:
            broker.restart()
        wait_cluster_ready(brokers)
        native = ",".join(broker.bootstrap for broker in brokers)
        assert _committed(native, "g", "spread", 2) == {1: 8}
    finally:
        for broker in brokers:
            broker.cleanup()
