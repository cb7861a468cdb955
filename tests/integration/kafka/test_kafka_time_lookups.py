"""``offsets_for_times`` from kafka-python and confluent-kafka equals tslog's own
``Consumer.offsets_for_times`` for the same time and the topic's timestamp type, over random
times (hypothesis): a CreateTime topic whose records' CreateTimes go back and forth, and a
LogAppendTime topic (tslog's default) searched by the broker's LATs."""

from __future__ import annotations

import random

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from tslog.client import Consumer, Producer, TopicPartition

BASE_MS = 1_790_000_000_000
SPAN_MS = 10_000


@pytest.fixture(scope="module")
def topics(kafka_broker):
    """(CreateTime topic, LogAppendTime topic, the LogAppendTime topic's LAT range), each
    holding 300 records in several batches."""
    created = kafka_broker.topic("ct", message_timestamp_type="CreateTime",
                                 message_timestamp_before_max_ms=str(2**62))
    appended = kafka_broker.topic("lat")
    rng = random.Random(7)
    with Producer(kafka_broker.bootstrap, linger_ms=1) as producer:
        for i in range(300):
            producer.send(created, b"v%d" % i, partition=0,
                          timestamp_ms=BASE_MS + rng.randrange(SPAN_MS))
            metadata = producer.send(appended, b"v%d" % i, partition=0)
            if i % 50 == 49:
                producer.flush()
        producer.flush()
    with Consumer(kafka_broker.bootstrap) as consumer:
        first = consumer.offsets_for_times({TopicPartition(appended, 0): 0})
    lat_range = (first[TopicPartition(appended, 0)].timestamp,
                 metadata.get(10).log_append_time)
    return created, appended, lat_range


@pytest.fixture(scope="module")
def clients(kafka_broker):
    native = Consumer(kafka_broker.bootstrap)
    kafka_python = KafkaConsumer(bootstrap_servers=kafka_broker.kafka)
    confluent = ConfluentConsumer({"bootstrap.servers": kafka_broker.kafka,
                                   "group.id": "lookups"})
    yield native, kafka_python, confluent
    native.close()
    kafka_python.close()
    confluent.close()


def _all_agree(clients, topic: str, timestamp: int, timestamp_type: str) -> None:
    native, kafka_python, confluent = clients
    found = native.offsets_for_times({TopicPartition(topic, 0): timestamp}, timestamp_type)
    expected = found[TopicPartition(topic, 0)]
    expected_offset = -1 if expected is None else expected.offset
    by_kafka_python = kafka_python.offsets_for_times({KTopicPartition(topic, 0): timestamp})
    answer = by_kafka_python[KTopicPartition(topic, 0)]
    assert (None if answer is None else (answer.offset, answer.timestamp)) == \
        (None if expected is None else (expected.offset, expected.timestamp))
    [by_confluent] = confluent.offsets_for_times(
        [ConfluentTopicPartition(topic, 0, timestamp)], 10)
    assert by_confluent.error is None
    assert by_confluent.offset == expected_offset


@settings(max_examples=12, deadline=None)
@given(st.integers(BASE_MS - 100, BASE_MS + SPAN_MS + 100))
def test_create_time_lookups_agree_with_tslogs_own(topics, clients, timestamp):
    _all_agree(clients, topics[0], timestamp, "create")


@settings(max_examples=12, deadline=None)
@given(st.floats(-0.01, 1.01))
def test_log_append_time_lookups_agree_with_tslogs_own(topics, clients, where):
    low, high = topics[2]
    _all_agree(clients, topics[1], low + round(where * (high - low)), "append")


def test_the_special_lookups_agree(topics, clients):
    native, kafka_python, confluent = clients
    for topic in topics[:2]:
        tp = KTopicPartition(topic, 0)
        assert kafka_python.beginning_offsets([tp]) == {tp: 0}
        assert kafka_python.end_offsets([tp]) == {tp: 300}
        low, high = confluent.get_watermark_offsets(ConfluentTopicPartition(topic, 0), 10)
        assert (low, high) == (0, 300)
