"""Kafka's consumer protocol bytes that DescribeGroups carries for a KIP-848 member (issue
41: the Kafka port describes tslog's groups too): what tslog writes is what a Kafka client
reads (kafka-python's own decoder is the oracle), and what tslog reads back is what it wrote,
for any topics and partitions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from tslog.broker.groups.consumer_protocol import (
    by_topic,
    consumer_assignment,
    encode_assignment,
    encode_subscription,
)

topics = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                 max_size=20)
pairs = st.sets(st.tuples(topics, st.integers(0, 2**31 - 1)), max_size=30)


def oracle_assignment(pairs_: set) -> dict[str, list[int]]:
    topics_: dict[str, list[int]] = {}
    for topic, partition in pairs_:
        topics_.setdefault(topic, []).append(partition)
    return {topic: sorted(parts) for topic, parts in topics_.items()}


@given(pairs)
def test_an_assignment_reads_in_kafka_python_as_the_partitions_it_was_written_from(written):
    decoded = ConsumerProtocolAssignment.decode(encode_assignment(written))
    assert decoded.version == 0
    assert {entry.topic: sorted(entry.partitions) for entry in decoded.assigned_partitions} \
        == oracle_assignment(written)


@given(pairs)
def test_an_assignment_reads_back_in_tslog_as_written(written):
    assert consumer_assignment(encode_assignment(written)) == by_topic(written)


@given(st.sets(topics, max_size=30))
def test_a_subscription_reads_in_kafka_python_as_its_topics(subscribed):
    decoded = ConsumerProtocolSubscription.decode(encode_subscription(subscribed))
    assert (decoded.version, sorted(decoded.topics)) == (0, sorted(subscribed))
