"""Admin: topics and configs as a user manages them, against a real broker."""

from __future__ import annotations

import pytest

from tslog.client import Admin, TopicPartition
from tslog.client.errors import (
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)


def test_create_with_exist_ok_can_run_again_and_leaves_the_topic_as_it_is(broker):
    with Admin(broker.bootstrap) as admin:
        assert admin.create_topic("again", partitions=3, exist_ok=True) is True
        assert admin.create_topic("again", partitions=5, exist_ok=True) is False
        assert len(admin.describe_topic("again").partitions) == 3
        with pytest.raises(InvalidTopicError):  # other errors still raise
            admin.create_topic("no spaces allowed", exist_ok=True)


def test_topic_lifecycle(broker):
    with Admin(broker.bootstrap) as admin:
        assert admin.list_topics() == []
        admin.create_topic("orders", partitions=3, config={"retention.ms": 3_600_000})
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topic("orders")
        with pytest.raises(InvalidTopicError):
            admin.create_topic("no spaces allowed")
        assert admin.list_topics() == ["orders"]
        description = admin.describe_topic("orders")
        assert [p.partition for p in description.partitions] == [0, 1, 2]
        node_ids = set(admin.brokers())
        for partition in description.partitions:
            assert partition.leader in node_ids and partition.leader_epoch >= 0
            assert partition.replicas == [partition.leader] and partition.isr == [partition.leader]
        admin.delete_topic("orders")
        assert admin.list_topics() == []
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_topic("orders")


def test_configs_describe_and_alter_incrementally(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("conf", config={"retention.ms": "1000000"})
        configs = admin.describe_configs("conf")
        assert configs["retention.ms"].value == "1000000"
        assert configs["retention.ms"].source == "topic"
        default_segment_ms = configs["segment.ms"]
        assert default_segment_ms.source in ("default", "broker")
        admin.alter_configs("conf", {"segment.ms": 60_000})
        configs = admin.describe_configs("conf")
        assert (configs["segment.ms"].value, configs["segment.ms"].source) == ("60000", "topic")
        assert configs["retention.ms"].value == "1000000"  # untouched keys stay
        admin.alter_configs("conf", {"retention.ms": None})  # back to the default
        configs = admin.describe_configs("conf")
        assert configs["retention.ms"].source != "topic"
        assert configs["segment.ms"].value == "60000"


def test_list_offsets_of_an_empty_topic(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("empty", partitions=2)
        tps = [TopicPartition("empty", p) for p in (0, 1)]
        latest = admin.list_offsets({tp: -1 for tp in tps})
        assert {tp: value.offset for tp, value in latest.items()} == {tps[0]: 0, tps[1]: 0}
        assert admin.list_offsets({tps[0]: 1_000}) == {tps[0]: None}
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.list_offsets({TopicPartition("missing", 0): -1})
