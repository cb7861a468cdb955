"""Time lookups poll for their answer for ``lookup_poll_us`` at most, then sleep.

Goal: the polling that keeps a lookup's thread from halting its vCPU costs the caller no more
than its window of CPU when an answer is slow, stops when the answer comes, and is off at 0;
the answer itself is the same either way. Method: a real broker is stopped with SIGSTOP
while a lookup waits for it, so the answer is late by as long as the test chooses; the CPU
this process uses meanwhile shows whether the lookup polled (it spins) or slept (it uses
none). Windows of 10 ms stand far above scheduling noise; the lower bound leaves room for a
loop that other processes keep off the CPU for part of its window (polling uses wall time). Both paths are covered: the async
consumer on the caller's loop, and the sync facade's direct socket on the caller's thread.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.aio import AsyncConsumer

WINDOW_US = 10_000
STOPPED_S = 0.1  # how long the broker stays stopped while a lookup waits for it
TP = TopicPartition("poll", 0)


@pytest.fixture
def filled(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("poll")
    with Producer(broker.bootstrap) as producer:
        sent = [producer.send("poll", b"r%d" % i) for i in range(20)]
        producer.flush()
    written = [future.get(10) for future in sent]
    target = written[7].log_append_time
    first = min(md.offset for md in written if md.log_append_time >= target)
    return broker, target, first


def paused(broker):
    """SIGSTOP the broker; the returned callable lets it run again (SIGCONT)."""
    os.kill(broker.process.pid, signal.SIGSTOP)
    return lambda: os.kill(broker.process.pid, signal.SIGCONT)


async def async_lookup_cpu(bootstrap, broker, target, poll_us):
    """(CPU seconds this process used while the lookup waited, the lookup's answer)."""
    async with AsyncConsumer(bootstrap, lookup_poll_us=poll_us) as consumer:
        expected = await consumer.offsets_for_times({TP: target})  # connected and warm
        resume = paused(broker)
        try:
            used = time.process_time()
            lookup = asyncio.ensure_future(consumer.offsets_for_times({TP: target}))
            await asyncio.sleep(STOPPED_S)
            used = time.process_time() - used
        finally:
            resume()
        assert not lookup.done()  # it did wait for the broker
        assert await lookup == expected
        return used, expected


def sync_lookup_cpu(bootstrap, broker, target, poll_us):
    with Consumer(bootstrap, lookup_poll_us=poll_us) as consumer:
        expected = consumer.offsets_for_times({TP: target})
        answers = []
        resume = paused(broker)
        try:
            used = time.process_time()
            waiter = threading.Thread(
                target=lambda: answers.append(consumer.offsets_for_times({TP: target})))
            waiter.start()
            time.sleep(STOPPED_S)
            used = time.process_time() - used
        finally:
            resume()
        waiter.join(10)
        assert answers == [expected]
        return used, expected


async def test_an_async_lookup_polls_for_its_window_then_sleeps(filled):
    broker, target, first = filled
    used, found = await async_lookup_cpu(broker.bootstrap, broker, target, WINDOW_US)
    assert found[TP].offset == first
    assert 0.2 * WINDOW_US / 1e6 <= used < 2.5 * WINDOW_US / 1e6  # polled, then slept
    used, found = await async_lookup_cpu(broker.bootstrap, broker, target, 0)
    assert found[TP].offset == first
    assert used < 0.3 * WINDOW_US / 1e6  # off: slept from the start


def test_a_sync_lookup_polls_on_the_callers_thread_for_its_window_then_sleeps(filled):
    broker, target, first = filled
    used, found = sync_lookup_cpu(broker.bootstrap, broker, target, WINDOW_US)
    assert found[TP].offset == first
    assert 0.2 * WINDOW_US / 1e6 <= used < 2.5 * WINDOW_US / 1e6
    used, found = sync_lookup_cpu(broker.bootstrap, broker, target, 0)
    assert found[TP].offset == first
    assert used < 0.3 * WINDOW_US / 1e6


async def test_polling_ends_with_the_answer(filled):
    """A lookup answered at once leaves the loop asleep afterwards, however long the window."""
    broker, target, _ = filled
    async with AsyncConsumer(broker.bootstrap, lookup_poll_us=WINDOW_US) as consumer:
        for _ in range(5):
            await consumer.offsets_for_times({TP: target})
        used = time.process_time()
        await asyncio.sleep(STOPPED_S)
        assert time.process_time() - used < 0.3 * WINDOW_US / 1e6


@pytest.mark.parametrize("value", [-1, 10_001, 1.5])
def test_a_window_out_of_range_is_refused(value):
    with pytest.raises(ValueError, match="lookup_poll_us"):
        AsyncConsumer("127.0.0.1:9", lookup_poll_us=value)
