"""Admin's consumer-group methods against a real broker: list, describe, read and set offsets,
delete; refusals while a member is live (made with raw-wire heartbeats) and for offsets
outside the log."""

from __future__ import annotations

import pytest

from tests.helpers.group_wire import heartbeat, join
from tests.helpers.wire import Wire
from tslog.client import Admin, OffsetAndMetadata, Producer, TopicPartition
from tslog.client.errors import (
    GroupIdNotFoundError,
    NonEmptyGroupError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)

pytestmark = pytest.mark.timeout(120)


def produce(broker, topic: str, counts: dict[int, int]) -> None:
    with Producer(broker.bootstrap, linger_ms=0) as producer:
        for partition, count in counts.items():
            for i in range(count):
                producer.send(topic, b"r%d" % i, partition=partition).get(10)


def test_list_describe_offsets_and_delete_of_a_group(broker):
    with Admin(broker.bootstrap) as admin, Wire(broker.host, broker.port) as wire:
        admin.create_topic("events", partitions=2)
        produce(broker, "events", {0: 5, 1: 3})
        assert admin.list_consumer_groups() == []
        member_id, epoch = join(wire, "readers", ["events"])

        (listing,) = admin.list_consumer_groups()
        assert (listing.group_id, listing.members) == ("readers", 1)
        group = admin.describe_consumer_groups(["readers"])["readers"]
        assert group.assignor == "uniform" and group.group_epoch >= 1
        (member,) = group.members
        assert (member.member_id, member.member_epoch) == (member_id, epoch)
        assert member.subscribed_topics == ["events"]
        assert member.target == [TopicPartition("events", 0), TopicPartition("events", 1)]

        with pytest.raises(NonEmptyGroupError, match="live members"):
            admin.alter_consumer_group_offsets("readers", {TopicPartition("events", 0): 2})
        with pytest.raises(NonEmptyGroupError, match="live members"):
            admin.delete_consumer_groups(["readers"])
        assert admin.list_consumer_group_offsets("readers") == {}

        heartbeat(wire, "readers", member_id, -1)  # leaves: the group is empty
        assert admin.list_consumer_groups()[0].state == "EMPTY"
        admin.alter_consumer_group_offsets("readers", {TopicPartition("events", 0): 2,
                                                       TopicPartition("events", 1): 3})
        assert admin.list_consumer_group_offsets("readers") == {
            TopicPartition("events", 0): OffsetAndMetadata(2, ""),
            TopicPartition("events", 1): OffsetAndMetadata(3, "")}

        admin.delete_consumer_groups(["readers"])
        assert admin.list_consumer_groups() == []
        assert admin.list_consumer_group_offsets("readers") == {}  # deleted with the group
        with pytest.raises(GroupIdNotFoundError):
            admin.describe_consumer_groups(["readers"])
        with pytest.raises(GroupIdNotFoundError):
            admin.delete_consumer_groups(["readers"])


def test_offsets_outside_the_log_are_refused_and_change_nothing(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", partitions=1)
        produce(broker, "events", {0: 4})
        tp = TopicPartition("events", 0)
        admin.alter_consumer_group_offsets("replay", {tp: 4})  # the log end is allowed
        with pytest.raises(OffsetOutOfRangeError, match=r"\[0, 4\]"):
            admin.alter_consumer_group_offsets("replay", {tp: 5})
        with pytest.raises(OffsetOutOfRangeError):
            admin.alter_consumer_group_offsets("replay", {tp: -1})
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.alter_consumer_group_offsets("replay", {TopicPartition("nope", 0): 0})
        assert admin.list_consumer_group_offsets("replay") == {tp: OffsetAndMetadata(4, "")}
        # A group that only committed offsets is a group: listed and described EMPTY.
        assert [(g.group_id, g.state, g.members) for g in admin.list_consumer_groups()] == [
            ("replay", "EMPTY", 0)]
        described = admin.describe_consumer_groups(["replay"])["replay"]
        assert (described.state, described.members) == ("EMPTY", [])
