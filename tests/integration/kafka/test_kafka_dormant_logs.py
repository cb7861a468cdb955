"""After a clean restart every partition's log is dormant; the first requests for them, from
Kafka's clients on the Kafka port and from tslog's own on its port, are answered as before
the restart while a worker thread opens the logs (``broker/data/waking.py``): lookups and
reads, and an idempotent producer pipelining over every partition, whose batches must still
land in the order it sent them. The clients are kafka-python and confluent-kafka, none of
them written here."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from tests.helpers.wire import Wire
from tests.integration.kafka.conftest import start_kafka_broker
from tslog.client import Producer
from tslog.protocol.messages import LATEST_TIMESTAMP, ApiKey

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 24


@pytest.fixture
def restarted(tmp_path):
    """A broker whose topic's every partition holds two records, restarted cleanly (its
    logs all dormant): (the broker, the topic)."""
    broker = start_kafka_broker(tmp_path)
    topic = broker.topic("dormant", partitions=PARTITIONS)
    with Producer(broker.bootstrap, linger_ms=1) as producer:
        for partition in range(PARTITIONS):
            for value in (b"a", b"b"):
                producer.send(topic, value, partition=partition)
        producer.flush()
    broker.process.restart()  # SIGTERM, a clean exit asserted, then a start
    yield broker, topic
    broker.process.cleanup()


def test_kafka_clients_first_lookups_over_dormant_partitions(restarted):
    broker, topic = restarted
    confluent = ConfluentConsumer({"bootstrap.servers": broker.kafka, "group.id": "dormant"})
    try:
        found = confluent.offsets_for_times(
            [ConfluentTopicPartition(topic, p, 0) for p in range(PARTITIONS)], timeout=30)
        assert [(tp.partition, tp.offset, tp.error) for tp in found] == [
            (p, 0, None) for p in range(PARTITIONS)]
    finally:
        confluent.close()
    kafka_python = KafkaConsumer(bootstrap_servers=broker.kafka)
    try:
        partitions = [KTopicPartition(topic, p) for p in range(PARTITIONS)]
        assert kafka_python.end_offsets(partitions) == {tp: 2 for tp in partitions}
        kafka_python.assign(partitions[:1])
        kafka_python.seek(partitions[0], 0)
        polled = kafka_python.poll(timeout_ms=10_000, max_records=10)
        assert [r.value for r in polled[partitions[0]]] == [b"a", b"b"]
    finally:
        kafka_python.close()


def test_one_native_list_offsets_over_every_dormant_partition(restarted):
    broker, topic = restarted
    body = {"replica_id": -1, "timestamp_type": "append", "topics": [{"topic": topic,
            "partitions": [{"partition": p, "timestamp": LATEST_TIMESTAMP}
                           for p in range(PARTITIONS)]}]}
    with Wire(broker.process.host, broker.process.port) as wire:
        answer = wire.request(ApiKey.LIST_OFFSETS, body)
    found = answer["topics"][0]["partitions"]
    assert [(e["partition"], e["error_code"], e["offset"]) for e in found] == [
        (p, 0, 2) for p in range(PARTITIONS)]


def test_an_idempotent_producer_over_every_dormant_partition_keeps_its_order(restarted):
    """librdkafka with 5 requests in flight, each naming many partitions whose logs open
    in a worker thread: every record is acknowledged once, none is refused as out of
    order, and each partition holds its records in the order sent."""
    broker, topic = restarted
    errors, delivered = [], []
    producer = ConfluentProducer({
        "bootstrap.servers": broker.kafka, "enable.idempotence": True, "acks": "all",
        "max.in.flight.requests.per.connection": 5, "linger.ms": 2,
        "error_cb": lambda err: errors.append(err)})
    count = 40 * PARTITIONS
    for i in range(count):
        producer.produce(topic, b"%d" % i, partition=i % PARTITIONS,
                         on_delivery=lambda err, msg: errors.append(err) if err
                         else delivered.append(msg.offset()))
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == [] and len(delivered) == count
    kafka_python = KafkaConsumer(bootstrap_servers=broker.kafka)
    try:
        for partition in range(PARTITIONS):
            tp = KTopicPartition(topic, partition)
            kafka_python.assign([tp])
            kafka_python.seek(tp, 0)
            values = []
            for _ in range(20):
                if len(values) >= 42:
                    break
                values += [r.value for r in kafka_python.poll(timeout_ms=1_000).get(tp, [])]
            assert values == [b"a", b"b"] + [b"%d" % i for i in range(partition, count,
                                                                      PARTITIONS)]
    finally:
        kafka_python.close()
