"""A producer writing round-robin over many partitions starts a batch with nearly every
record. What that costs is counted, never timed, against a real broker: how often the
caller's ``send`` wakes the sender's loop (a write to its self-pipe each time) and how many asyncio futures a
``flush`` makes for the batches it waits on. Every record must still arrive, where it was
sent, in order.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.helpers.wire import Wire, split_values
from tslog.client import Producer

pytestmark = pytest.mark.timeout(300)

TOPICS, PARTITIONS, ROUNDS = 2, 500, 2  # 2,000 records, two per partition, one batch each


def targets() -> list[tuple[str, int]]:
    return [(f"rr{t}", p) for t in range(TOPICS) for p in range(PARTITIONS)]


def counting(counts: dict, name: str, function, thread: int | None = None):
    """``function``, counting its calls in ``counts[name]`` (those from ``thread`` only,
    if given)."""
    def counted(*args, **kwargs):
        if thread is None or threading.get_ident() == thread:
            counts[name] = counts.get(name, 0) + 1
        return function(*args, **kwargs)
    return counted


def test_round_robin_sends_wake_the_sender_rarely_and_flush_wraps_no_future_per_batch(
        broker, monkeypatch):
    with Wire(broker.host, broker.port, timeout_s=60) as wire:
        for t in range(TOPICS):
            assert wire.create_topic(f"rr{t}", partitions=PARTITIONS) == 0
    counts: dict[str, int] = {}
    with Producer(broker.bootstrap, acks=1, linger_ms=100) as producer:
        for topic in {topic for topic, _ in targets()}:  # metadata and a connection first
            producer.send(topic, b"warm", partition=0).get(30)
        sender = producer._core._sender
        # The sends' wakes (its responses wake it too, on its own thread).
        sender.wake = counting(counts, "wakes", sender.wake, threading.get_ident())
        monkeypatch.setattr(asyncio, "wrap_future",
                            counting(counts, "wrapped", asyncio.wrap_future))
        futures = [producer.send(topic, b"%s-%d-%d" % (topic.encode(), partition, n),
                                 partition=partition)
                   for n in range(ROUNDS) for topic, partition in targets()]
        producer.flush()
    records = len(futures)
    # Before: one wake a record (each started a batch) and one wrapped future a batch.
    assert counts.get("wakes", 0) <= records / 20, counts
    assert counts.get("wrapped", 0) == 0, counts
    assert all(future.done() and future.exception() is None for future in futures)
    with Wire(broker.host, broker.port, timeout_s=60) as wire:
        for topic, partition in targets()[:: PARTITIONS // 5]:
            values = [value for _, value in split_values(
                wire.fetch(topic, partition, 0)["records"])]
            expected = [b"%s-%d-%d" % (topic.encode(), partition, n) for n in range(ROUNDS)]
            assert values[-ROUNDS:] == expected
