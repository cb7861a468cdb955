"""``kafka-consumer-groups --delete-offsets`` (OffsetDelete) against a reference Apache Kafka
and tslog's Kafka listener (see test_tools_topics.py): what the tool prints must match.

The session: a group commits offsets on two partitions (a console consumer that has left);
the offsets of one partition are deleted, then of the whole topic; a group that does not
exist is refused; while a console consumer of the group is subscribed to the topic, the
tool is refused on tslog (GROUP_SUBSCRIBED_TO_TOPIC) and the offsets stay. Each step's effect is
read back with ``--describe``, and the final offsets through tslog's own client.
"""

from __future__ import annotations

import pytest

from tests.kafka_reference import normalize
from tests.kafka_reference.pairs import both, unique
from tests.kafka_reference.test_tools_groups import Reader, groups, wait_for, wait_until_read
from tests.kafka_reference.test_tools_topics import consume, produce, topics
from tslog.client import Consumer, TopicPartition

pytestmark = [pytest.mark.kafka_reference, pytest.mark.slow]


def delete_offsets(side, group: str, topic: str) -> list[list[str]]:
    return normalize.table(groups(side, "--delete-offsets", "--group", group, "--topic", topic))


def test_delete_offsets_of_a_partition_a_topic_an_unknown_group_and_a_subscribed_one(
        pair, tmp_path):
    topic, group, other = unique("do-topic"), unique("do"), unique("do-none")

    def session(side):
        topics(side, "--create", "--topic", topic, "--partitions", "2",
               "--config", "message.timestamp.type=LogAppendTime")
        produce(side, topic, "".join(f"h:a\tk{i}\tv{i}\n" for i in range(6)))
        consume(side, topic, "--group", group, "--from-beginning", "--max-messages", "6")
        out = {"one": delete_offsets(side, group, f"{topic}:0"),
               "after one": normalize.table(groups(side, "--describe", "--group", group)),
               "unknown": delete_offsets(side, other, topic)}
        reader = Reader(side, topic, group, tmp_path / f"{side.name}-reader.log")
        try:
            produce(side, topic, "h:b\tk\tlate\n")
            wait_until_read(side, group, [reader], 1)
            wait_for(side, group, [2])  # a settled member owning both partitions, not a rebalance
            out["subscribed"] = delete_offsets(side, group, topic)
        finally:
            reader.stop()
        out["all"] = delete_offsets(side, group, topic)
        return out

    kafka, tslog = both(pair, session)
    # Apache Kafka 4.4 answered GROUP_SUBSCRIBED_TO_TOPIC here in one run and deleted the
    # offsets in another (same session; its classic group's subscriptions are computed at
    # each rebalance): that step is tslog's alone to assert, as Kafka documents it.
    assert {k: v for k, v in kafka.items() if k != "subscribed"} == \
        {k: v for k, v in tslog.items() if k != "subscribed"}
    assert tslog["one"][-2:] == [["TOPIC", "PARTITION", "STATUS"], [topic, "0", "Successful"]]
    assert [row[2] for row in tslog["after one"][1:]] == ["1"]  # partition 1's stays
    assert "does not exist" in " ".join(map(" ".join, tslog["unknown"]))
    assert "subscribed" in " ".join(map(" ".join, tslog["subscribed"])).lower()
    assert tslog["all"][-2:] == [[topic, "0", "Successful"], [topic, "1", "Successful"]]
    with Consumer(pair.native, group_id=group) as native:  # nothing committed is left
        assert native.committed(TopicPartition(topic, 0)) is None
        assert native.committed(TopicPartition(topic, 1)) is None
