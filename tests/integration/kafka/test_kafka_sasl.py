"""SCRAM on the Kafka port: the native listener's login (same users, same session code), so
librdkafka and kafka-python log in with SCRAM-SHA-256/512 and then produce and consume; a
wrong password is refused with SASL_AUTHENTICATION_FAILED and never reaches the log; a
request before the login closes the connection."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from tests.helpers.broker_process import BrokerProcess, free_port
from tslog.protocol.kafka import encode_request

PASSWORD = "kafka-doc-secret-1"


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("sasl")
    (base / "users").write_text(f"alice:{PASSWORD}\n")
    port = free_port()
    broker = BrokerProcess(base / "data", args=["--kafka-listen", f"127.0.0.1:{port}"],
                           config={"sasl_mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
                                   "sasl_bootstrap_users_file": base / "users"})
    broker.launch()
    deadline = time.monotonic() + 30
    while "Kafka listener on" not in broker.log_text():
        assert broker.running and time.monotonic() < deadline, broker.log_text()
        time.sleep(0.05)
    yield broker, port
    broker.cleanup()


def _settings(port: int, mechanism: str, password: str) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": password}


def test_librdkafka_and_kafka_python_log_in_then_produce_and_consume(sasl_broker):
    broker, port = sasl_broker
    settings = _settings(port, "SCRAM-SHA-512", PASSWORD)
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(settings)
    [future] = admin.create_topics([NewTopic("logged", 1, 1)]).values()
    future.result(10)
    producer = Producer({**settings, "enable.idempotence": True})
    producer.produce("logged", b"signed in", partition=0)
    assert producer.flush(10) == 0
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}",
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                             sasl_plain_username="alice", sasl_plain_password=PASSWORD,
                             consumer_timeout_ms=5000)
    consumer.assign([KTopicPartition("logged", 0)])
    consumer.seek(KTopicPartition("logged", 0), 0)
    assert next(consumer).value == b"signed in"
    consumer.close()
    assert "authenticated as User:alice" in broker.log_text()
    assert PASSWORD not in broker.log_text()


def test_a_wrong_password_is_refused(sasl_broker):
    broker, port = sasl_broker
    errors = []
    consumer = Consumer({**_settings(port, "SCRAM-SHA-256", "not-the-password"),
                         "group.id": "unused", "error_cb": errors.append, "log_level": 0})
    try:
        deadline = time.monotonic() + 10
        while not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
            assert time.monotonic() < deadline, errors
            consumer.poll(0.1)
    finally:
        consumer.close()
    assert "authentication failed for user alice (SCRAM-SHA-256)" in broker.log_text()
    assert "not-the-password" not in broker.log_text()


def test_a_request_before_the_login_closes_the_connection(sasl_broker):
    broker, port = sasl_broker
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        request = encode_request(3, 12, 1, "sneaky", {"topics": None})
        sock.sendall(struct.pack(">I", len(request)) + request)
        assert sock.recv(4096) == b""
