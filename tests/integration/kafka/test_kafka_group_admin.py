"""ListGroups, DescribeGroups, DeleteGroups and CreatePartitions on the Kafka listener, through
librdkafka's admin client (confluent-kafka), on every CI run (tests/kafka_reference/ checks
the same APIs with Kafka's own tools, beside Apache Kafka, in its slow tests).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions

from tslog.client import Admin

ROUNDS = 200  # polls of 100 ms while waiting for an assignment (counted, not timed)


def _member(kafka: str, topic: str, group: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": group, "client.id": "lister",
                         "session.timeout.ms": 10000, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    return consumer


def _until_assigned(consumers: list[Consumer], partitions: int) -> None:
    for _ in range(ROUNDS):
        for consumer in consumers:
            consumer.poll(0.1)
        if sum(len(c.assignment()) for c in consumers) == partitions and all(
                c.assignment() for c in consumers):
            return
    raise AssertionError("the group never assigned every partition")


def test_list_describe_and_delete_a_classic_group(kafka_broker):
    topic = kafka_broker.topic("admin", partitions=2)
    group = "admin-group"
    admin = AdminClient({"bootstrap.servers": kafka_broker.kafka})
    members = [_member(kafka_broker.kafka, topic, group) for _ in range(2)]
    try:
        _until_assigned(members, 2)
        listed = {g.group_id: g for g in admin.list_consumer_groups().result(30).valid}
        assert listed[group].state == ConsumerGroupState.STABLE
        described = admin.describe_consumer_groups([group])[group].result(30)
        assert described.state == ConsumerGroupState.STABLE
        assert len(described.members) == 2
        assert {m.client_id for m in described.members} == {"lister"}
        assert {m.host for m in described.members} == {"/127.0.0.1"}
        owned = sorted(tp.partition for m in described.members
                       for tp in m.assignment.topic_partitions)
        assert owned == [0, 1]
        with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
            admin.delete_consumer_groups([group])[group].result(30)
    finally:
        for consumer in members:
            consumer.close()
    admin.delete_consumer_groups([group])[group].result(30)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    with pytest.raises(KafkaException, match="GROUP_ID_NOT_FOUND"):
        admin.delete_consumer_groups([group])[group].result(30)


def test_describe_an_unknown_group(kafka_broker):
    """librdkafka asks DescribeGroups below v6, where Kafka answers an unknown group as Dead
    without an error (v6 answers GROUP_ID_NOT_FOUND: Kafka's tools, test_tools_groups.py)."""
    admin = AdminClient({"bootstrap.servers": kafka_broker.kafka})
    described = admin.describe_consumer_groups(["nobody"])["nobody"].result(30)
    assert described.state == ConsumerGroupState.DEAD and not described.members


def test_create_partitions(kafka_broker):
    topic = kafka_broker.topic("grow", partitions=1)
    admin = AdminClient({"bootstrap.servers": kafka_broker.kafka})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
    with Admin(kafka_broker.bootstrap) as native:
        assert len(native.describe_topic(topic).partitions) == 3
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(30)
