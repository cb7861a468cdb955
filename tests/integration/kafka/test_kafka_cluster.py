"""In a cluster, each broker publishes its Kafka address with its etcd registration, and
Metadata on any broker's Kafka port lists every broker's Kafka address, so a Kafka producer
reaches the leader of each partition (here spread over two brokers)."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tslog.client import Admin
from tslog.protocol.kafka import decode_response, encode_request


def _kafka_metadata(port: int) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        request = encode_request(3, 12, 1, "cluster-test", {"topics": None})
        sock.sendall(struct.pack(">I", len(request)) + request)
        size = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(3, 12, sock.recv(size, socket.MSG_WAITALL))[1]


@pytest.mark.slow  # an etcd and two brokers
def test_metadata_lists_every_brokers_kafka_address_and_producers_reach_each_leader(
        tmp_path, etcd):
    kafka_ports = [free_port(), free_port()]
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 2000,
        "kafka_listen": f"127.0.0.1:{kafka_ports[node]}"}) for node in range(2)]
    try:
        for broker in brokers:
            broker.launch()
        wait_cluster_ready(brokers)
        with Admin(brokers[0].bootstrap) as admin:
            admin.create_topic("spread", partitions=4, replication_factor=1)
        deadline = time.monotonic() + 20
        while True:
            body = _kafka_metadata(kafka_ports[1])
            topic = [t for t in body["topics"] if t["name"] == "spread"]
            if topic and all(p["error_code"] == 0 for p in topic[0]["partitions"]):
                break
            assert time.monotonic() < deadline, body
            time.sleep(0.1)
        assert sorted((b["node_id"], b["port"]) for b in body["brokers"]) == \
            [(0, kafka_ports[0]), (1, kafka_ports[1])]
        assert {p["leader_id"] for p in topic[0]["partitions"]} == {0, 1}
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{kafka_ports[0]}", acks="all")
        for partition in range(4):
            producer.send("spread", b"to %d" % partition, partition=partition).get(10)
        producer.close(5)
        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{kafka_ports[1]}")
        ends = consumer.end_offsets([TopicPartition("spread", p) for p in range(4)])
        consumer.close()
        assert set(ends.values()) == {1}
    finally:
        for broker in brokers:
            broker.cleanup()
