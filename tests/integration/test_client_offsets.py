"""Committed offsets, positions, and what the client does when the broker goes away.

Goal: a consumer group resumes where it committed, across a new consumer and across a broker
restart; a lost connection surfaces as ConnectionLostError and the same client object works
again once the broker is back. Method: real broker subprocesses, restarted on the same port
and data directory with ``BrokerProcess.restart``.
"""

from __future__ import annotations

import time

import pytest

from tslog.client import Admin, Consumer, ConnectionLostError, Producer, TopicPartition
from tslog.client.errors import TopicAlreadyExistsError

TP0, TP1 = TopicPartition("log", 0), TopicPartition("log", 1)


def fill(bootstrap, count_per_partition=50):
    with Admin(bootstrap) as admin:
        admin.create_topic("log", partitions=2)
    with Producer(bootstrap) as producer:
        for i in range(count_per_partition):
            producer.send("log", b"a%d" % i, partition=0)
            producer.send("log", b"b%d" % i, partition=1)
        producer.flush()


def poll_until(consumer, count, timeout_s=10.0):
    records = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        records += consumer.poll(200, max_records=count - len(records))
    return records


def test_commit_and_resume_across_consumers_and_a_broker_restart(broker):
    fill(broker.bootstrap)
    with Consumer(broker.bootstrap, group_id="replay", auto_offset_reset="earliest") as consumer:
        consumer.assign([TP0, TP1])
        assert consumer.committed(TP0) is None
        consumer.seek(TP0, 10)
        records = poll_until(consumer, 5)
        assert len(records) == 5  # max_records is honoured
        consumer.commit({TP0: 15})
        consumer.commit({TP1: 7})
        assert consumer.committed(TP0) == 15 and consumer.committed(TP1) == 7
    with Consumer(broker.bootstrap, group_id="replay") as consumer:
        consumer.assign([TP0, TP1])
        assert consumer.position(TP0) == 15 and consumer.position(TP1) == 7
        first = {}
        for record in poll_until(consumer, 35 + 43):
            first.setdefault(record.partition, record.offset)
        assert first == {0: 15, 1: 7}
        consumer.commit()  # current positions
        positions = {tp: consumer.position(tp) for tp in (TP0, TP1)}
    broker.restart()
    with Consumer(broker.bootstrap, group_id="replay") as consumer:
        assert {tp: consumer.committed(tp) for tp in (TP0, TP1)} == positions
    with Consumer(broker.bootstrap, group_id="someone-else") as consumer:
        assert consumer.committed(TP0) is None


def test_subscribe_positions_and_offset_queries(broker):
    fill(broker.bootstrap, 20)
    with Consumer(broker.bootstrap, "log", auto_offset_reset="earliest") as consumer:
        assert consumer.assignment() == {TP0, TP1}
        assert consumer.end_offsets([TP0, TP1]) == {TP0: 20, TP1: 20}
        assert consumer.beginning_offsets([TP0]) == {TP0: 0}
        assert consumer.position(TP0) == 0
        consumer.seek_to_end()
        assert consumer.position(TP1) == 20
        consumer.seek_to_beginning(TP1)
        records = poll_until(consumer, 20)
        assert [(r.partition, r.offset) for r in records] == [(1, i) for i in range(20)]
    with Consumer(broker.bootstrap, "log") as consumer:  # latest by default
        assert consumer.poll(300) == []
        assert consumer.position(TP0) == 20


def test_poll_skips_records_below_the_position_inside_a_batch(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("one-batch")
    tp = TopicPartition("one-batch", 0)
    with Producer(broker.bootstrap, linger_ms=50) as producer:  # one batch of 10
        for i in range(10):
            producer.send("one-batch", b"%d" % i)
        producer.flush()
    with Consumer(broker.bootstrap) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 7)
        assert [r.offset for r in poll_until(consumer, 3)] == [7, 8, 9]


def test_connection_loss_surfaces_then_the_client_reconnects(broker):
    fill(broker.bootstrap, 5)
    admin = Admin(broker.bootstrap, retries=1, retry_backoff_ms=20)
    consumer = Consumer(broker.bootstrap, group_id="g", retries=1, retry_backoff_ms=20)
    try:
        consumer.assign([TP0])
        consumer.commit({TP0: 3})
        broker.kill()
        with pytest.raises(ConnectionLostError):
            admin.list_topics()
        with pytest.raises(ConnectionLostError):
            consumer.committed(TP0)
        broker.start()
        assert admin.list_topics() == ["log"]
        assert consumer.committed(TP0) == 3
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topic("log")
    finally:
        admin.close()
        consumer.close()


def test_producer_retries_through_a_broker_restart(broker):
    fill(broker.bootstrap, 1)
    with Producer(broker.bootstrap, retries=20, retry_backoff_ms=50) as producer:
        assert producer.send("log", b"before", partition=0).get(10).offset == 1
        broker.restart()
        assert producer.send("log", b"after", partition=0).get(20).offset == 2


def test_producer_gives_up_with_connection_lost_when_the_broker_stays_down(broker):
    fill(broker.bootstrap, 1)
    with Producer(broker.bootstrap, retries=2, retry_backoff_ms=20) as producer:
        producer.send("log", b"x", partition=0).get(10)
        broker.kill()
        with pytest.raises(ConnectionLostError):
            producer.send("log", b"lost", partition=0).get(20)


def test_commit_and_lookups_are_not_stuck_behind_a_long_poll(broker):
    """Fetches long-poll on their own connection, so a commit answers at once."""
    fill(broker.bootstrap, 1)
    with Consumer(broker.bootstrap, group_id="g", fetch_max_wait_ms=10_000) as consumer:
        consumer.assign([TP0])
        consumer.seek_to_end()
        assert consumer.poll(300) == []  # a 10 s fetch is now parked at the broker
        started = time.monotonic()
        consumer.commit({TP0: 1})
        assert consumer.committed(TP0) == 1
        assert consumer.end_offsets([TP0]) == {TP0: 1}
        assert time.monotonic() - started < 5


def test_producer_refreshes_metadata_when_a_topic_is_recreated(broker):
    """UNKNOWN_TOPIC_OR_PARTITION is retriable and refreshes metadata: the send survives."""
    with Admin(broker.bootstrap) as admin, \
            Producer(broker.bootstrap, retries=50, retry_backoff_ms=20) as producer:
        admin.create_topic("phoenix")
        assert producer.send("phoenix", b"first").get(10).offset == 0
        admin.delete_topic("phoenix")
        future = producer.send("phoenix", b"second")
        admin.create_topic("phoenix", partitions=2)
        metadata = future.get(20)
        assert metadata.offset == 0  # a new log
    records = []
    with Consumer(broker.bootstrap, "phoenix", auto_offset_reset="earliest") as consumer:
        records = poll_until(consumer, 1)
    assert [r.value for r in records] == [b"second"]


def test_consumer_keeps_reading_across_a_broker_restart(broker):
    fill(broker.bootstrap, 10)
    with Consumer(broker.bootstrap, auto_offset_reset="earliest",
                  retry_backoff_ms=20) as consumer:
        consumer.assign([TP0])
        assert [r.offset for r in poll_until(consumer, 10)] == list(range(10))
        broker.restart()
        with Producer(broker.bootstrap) as producer:
            producer.send("log", b"after", partition=0).get(10)
        records = poll_until(consumer, 1, timeout_s=20)
        assert [(r.offset, r.value) for r in records] == [(10, b"after")]
