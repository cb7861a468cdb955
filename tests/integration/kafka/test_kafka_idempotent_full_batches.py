"""An idempotent Kafka batch within the topic's ``max.message.bytes`` is taken even when its
tslog batch is larger, and a retry of it is still recognised as the same batch.

Idempotence is Kafka 4's producer default (the Java producer, kafka-console-producer) and a
common librdkafka setting. A non-idempotent batch that grows past the limit as a tslog batch
is cut in several (``test_kafka_full_batches.py``); an idempotent one cannot be (its
sequence numbers name one batch, and a retry must match it), so ``max.message.bytes`` is
counted against the Kafka batch's size, which is what Kafka itself checks. Before, such a
batch was refused MESSAGE_TOO_LARGE, which producers report as a permanent failure."""

from __future__ import annotations

import re
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tslog.client import Admin, Consumer as TslogConsumer, TopicPartition as TslogPartition
from tslog.protocol.kafka import convert, decode_response, encode_request
from tslog.protocol.kafka.record_batch import encode_batch

MESSAGE_TOO_LARGE = 10
NOT_ENOUGH_REPLICAS = 19


def test_an_idempotent_librdkafka_producer_fills_batches_to_the_limit_and_loses_nothing(
        kafka_broker):
    # A long linger fills 1,000,000-byte batches (librdkafka's batch.size) whatever the
    # machine's load: 100-byte records make Kafka batches under the topic's 1 MiB limit
    # whose tslog batches are over it.
    topic = kafka_broker.topic("idem-full")
    values = [b"%012d" % i + b"v" * 88 for i in range(20_000)]
    producer = Producer({"bootstrap.servers": kafka_broker.kafka, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 10_000, "compression.type": "none",
                         "queue.buffering.max.messages": 1_000_000})
    delivered, failed = {}, []

    def report(error, message) -> None:
        if error is not None:
            failed.append(error)
        else:
            delivered[message.offset()] = message.value()

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=report)
    assert producer.flush(120) == 0
    assert failed == [], failed[:3]
    assert [delivered[offset] for offset in sorted(delivered)] == values
    assert sorted(delivered) == list(range(len(values)))
    assert _read_through_kafka(kafka_broker, topic, len(values)) == values


def _read_through_kafka(broker, topic: str, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": broker.kafka, "group.id": "unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    seen: dict = {}
    try:
        assert consumer.get_watermark_offsets(TopicPartition(topic, 0), 30) == (0, count)
        consumer.assign([TopicPartition(topic, 0, 0)])
        idle = 0
        while len(seen) < count and idle < 60:  # 60 empty polls: the records are not there
            batch = consumer.consume(10_000, 1.0)
            idle = 0 if batch else idle + 1
            for message in batch:
                assert message.error() is None, message.error()
                seen[message.offset()] = message.value()
    finally:
        consumer.close()
    return [seen[offset] for offset in sorted(seen)]


# -- the same at the byte level: a retry, and a batch over the limit ---------------------------


def _exchange(sock, api_key: int, version: int, correlation_id: int, body: dict) -> dict:
    request = encode_request(api_key, version, correlation_id, "idem-test", body)
    sock.sendall(struct.pack(">I", len(request)) + request)
    size = struct.unpack(">I", _read(sock, 4))[0]
    got, answer = decode_response(api_key, version, _read(sock, size))
    assert got == correlation_id
    return answer


def _read(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return data


def _produce(sock, correlation_id: int, topic: str, batch: bytes) -> dict:
    answer = _exchange(sock, 0, 9, correlation_id, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
    (result,) = answer["responses"][0]["partition_responses"]
    return result


def _idempotent_batch(values: list, producer: dict, sequence: int) -> bytes:
    return encode_batch(values, None, 1_700_000_000_000, producer_id=producer["producer_id"],
                        producer_epoch=producer["producer_epoch"], base_sequence=sequence)


def test_a_retried_idempotent_batch_grown_past_the_limit_is_written_once(kafka_broker):
    """Three empty-valued records per KiB: each takes about twice the room in tslog's
    batch, so a Kafka batch of 1,900 bytes becomes a tslog batch of about 3,500 under a
    2,000-byte limit. Sent twice (a producer retrying after a lost answer), it is written
    once and both answers carry its offset; the next sequence follows; a Kafka batch over
    the limit is refused with its own size."""
    topic = kafka_broker.topic("idem-retry", max_message_bytes="2000")
    with socket.create_connection(("127.0.0.1", kafka_broker.kafka_port), timeout=30) as sock:
        producer = _exchange(sock, 22, 4, 1, {"transactional_id": None,
                                              "transaction_timeout_ms": -1,
                                              "producer_id": -1, "producer_epoch": -1})
        assert producer["error_code"] == 0
        first = _idempotent_batch([b""] * 200, producer, 0)
        assert len(first) <= 2000 < len(convert.kafka_bytes_to_tslog(first)[1])
        answers = [_produce(sock, 2, topic, first), _produce(sock, 3, topic, first)]
        assert [(a["error_code"], a["base_offset"]) for a in answers] == [(0, 0), (0, 0)]
        second = _produce(sock, 4, topic, _idempotent_batch([b"x"], producer, 200))
        assert (second["error_code"], second["base_offset"]) == (0, 200)
        large = _idempotent_batch([b"z" * 3000], producer, 201)
        refused = _produce(sock, 5, topic, large)
    assert refused["error_code"] == MESSAGE_TOO_LARGE
    assert re.fullmatch(rf"a batch of {len(large)} bytes is larger than the topic's "
                        r"max\.message\.bytes \(2000\)", refused["error_message"] or "")
    with TslogConsumer(kafka_broker.bootstrap) as native:  # written once, nothing more
        tp = TslogPartition(topic, 0)
        native.assign([tp])
        native.seek(tp, 0)
        records = []
        while len(records) < 201:
            polled = native.poll(5000)
            assert polled, f"only {len(records)} records"
            records += polled
        assert [r.offset for r in records] == list(range(201))
        assert [r.value or b"" for r in records] == [b""] * 200 + [b"x"]
        assert native.end_offsets([tp])[tp] == 201


@pytest.mark.slow  # an etcd and two brokers
def test_the_follower_copies_an_idempotent_batch_stored_larger_than_the_limit(tmp_path, etcd):
    """acks = -1 with a follower in the ISR is answered once the follower holds the batch:
    a follower that refused the stored batch (it is over ``max.message.bytes`` as stored)
    would stall the high watermark and the answer would be REQUEST_TIMED_OUT. Followers check only
    ``segment.bytes``, as Kafka's followers ignore ``max.message.bytes``."""
    kafka_ports = [free_port(), free_port()]
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 2000,
        "kafka_listen": f"127.0.0.1:{kafka_ports[node]}"}) for node in range(2)]
    try:
        for broker in brokers:
            broker.launch()
        wait_cluster_ready(brokers)
        with Admin(brokers[0].bootstrap) as admin:
            admin.create_topic("idem-rf2", partitions=1, replication_factor=2,
                               config={"max.message.bytes": "2000",
                                       "min.insync.replicas": "2"})
            leader = -1
            for _ in range(200):
                leader = admin.describe_topic("idem-rf2").partitions[0].leader
                if leader >= 0:
                    break
                time.sleep(0.1)
        with socket.create_connection(("127.0.0.1", kafka_ports[leader]), timeout=30) as sock:
            producer = _exchange(sock, 22, 4, 1, {"transactional_id": None,
                                                  "transaction_timeout_ms": -1,
                                                  "producer_id": -1, "producer_epoch": -1})
            batch = _idempotent_batch([b""] * 200, producer, 0)
            answer = _wait_for_isr(sock, "idem-rf2", batch)
        # Within the produce's 10 s timeout, well before the follower could be dropped from
        # the ISR (replica.lag.time.max.ms, 30 s): only the follower's copy moves the HW.
        assert (answer["error_code"], answer["base_offset"]) == (0, 0)
    finally:
        for broker in brokers:
            broker.cleanup()


def _wait_for_isr(sock, topic: str, batch: bytes) -> dict:
    """Produce ``batch`` once the partition's ISR holds both brokers (NOT_ENOUGH_REPLICAS
    until the follower has joined: nothing is written then, so resending is safe)."""
    for attempt in range(200):
        answer = _produce(sock, 10 + attempt, topic, batch)
        if answer["error_code"] != NOT_ENOUGH_REPLICAS:
            return answer
        time.sleep(0.1)
    raise AssertionError("the follower never joined the ISR")
