"""``auto_create_topics_enable`` (Kafka's ``auto.create.topics.enable``): with it on, a Kafka
client's Metadata for a missing topic creates it, so ``kcat -P -t evnets`` writes instead of
waiting for a topic nobody makes; without it (tslog's default) the topic stays unknown.
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import uuid

import pytest

from tests.integration.kafka.conftest import start_kafka_broker
from tslog.client import Admin, Consumer, TopicPartition
from tslog.protocol.errors import ErrorCode
from tslog.protocol.kafka import decode_response, encode_request


def _metadata(port: int, names: list[str], allow: bool) -> dict[str, int]:
    """Metadata v12 for ``names``: topic -> error code."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        request = encode_request(3, 12, 1, "auto-create-test", {
            "topics": [{"name": name, "topic_id": uuid.UUID(int=0)} for name in names],
            "allow_auto_topic_creation": allow})
        sock.sendall(struct.pack(">I", len(request)) + request)
        size = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))[0]
        body = decode_response(3, 12, sock.recv(size, socket.MSG_WAITALL))[1]
    return {topic["name"]: topic["error_code"] for topic in body["topics"]}


@pytest.fixture(scope="module")
def creating_broker(tmp_path_factory):
    broker = start_kafka_broker(tmp_path_factory.mktemp("auto-create"),
                                auto_create_topics_enable="true", num_partitions=2)
    yield broker
    broker.process.cleanup()


def test_kcat_produces_to_a_topic_that_did_not_exist(creating_broker):
    assert shutil.which("kcat"), "kcat missing: .ci/run installs Debian's kcat"
    done = subprocess.run(["kcat", "-P", "-b", creating_broker.kafka, "-t", "evnets", "-p", "0",
                           "-K", ":"], input=b"k1:one\nk2:two\n", capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    with Admin(creating_broker.bootstrap) as admin:
        assert len(admin.describe_topic("evnets").partitions) == 2  # num_partitions
    with Consumer(creating_broker.bootstrap) as consumer:
        consumer.assign([TopicPartition("evnets", 0)])
        consumer.seek(TopicPartition("evnets", 0), 0)
        records = []
        while len(records) < 2:
            records.extend(consumer.poll(5000))
    assert [(r.key, r.value) for r in records] == [(b"k1", b"one"), (b"k2", b"two")]


def test_a_client_that_does_not_allow_creation_creates_nothing(creating_broker):
    assert _metadata(creating_broker.kafka_port, ["untouched"], allow=False) == {
        "untouched": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert _metadata(creating_broker.kafka_port, ["made", "made"], allow=True) == {"made": 0}


def test_an_invalid_name_is_refused_with_kafkas_error(creating_broker):
    assert _metadata(creating_broker.kafka_port, ["bad name!"], allow=True) == {
        "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION}


def test_off_by_default(kafka_broker):
    assert _metadata(kafka_broker.kafka_port, ["never-made"], allow=True) == {
        "never-made": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    with Admin(kafka_broker.bootstrap) as admin:
        assert "never-made" not in admin.list_topics()
