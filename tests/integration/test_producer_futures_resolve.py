"""Every producer future resolves within ``delivery_timeout_ms``, whatever the broker does.

Goal: a caller waiting in ``RecordFuture.get`` (or awaiting a future) must always get a value
or an error by the delivery deadline: broker killed mid-request, killed while the producer
is connecting, killed while starting up, frozen (SIGSTOP: connections open, nothing answers),
restarted, or gone for good. Once a future was seen unresolved minutes after a kill.

Method: a real broker process; a producer (sync ``Producer`` on its loop thread, or
``AsyncProducer`` on the test's loop) sends without pause to three partitions, now and then
waiting for a record as a blocking caller would, while the test runs a seeded random script
of SIGKILLs at random points, restarts (some killed again while starting), freezes, and a
final kill with no restart. Every future's resolution time is taken from a done callback
and compared with its send time: it must be at most ``DELIVERY_TIMEOUT_MS`` plus
``SLACK_S`` (scheduling on a loaded two-core machine). The seed is printed on failure
(``TSLOG_TEST_SEED`` replays it).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time

import pytest

from tslog.client import Admin, Producer
from tslog.client.aio import AsyncProducer
from tslog.client.errors import TslogError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

DELIVERY_TIMEOUT_MS = 2000
# A future may resolve this much after its delivery deadline: the deadline check runs on an
# event loop that shares two cores with a broker starting up and other tests.
SLACK_S = 0.75
TOPIC = "deadlines"
PARTITIONS = 3
CYCLES = 6


class Resolutions:
    """Send time and resolution time of every future, from its done callback."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[list] = []  # [sent_at, resolved_at or None, error or None]

    def track(self, future, sent_at: float) -> None:
        entry = [sent_at, None, None]
        with self._lock:
            self._entries.append(entry)

        def resolved(done) -> None:
            entry[2] = done.exception()
            entry[1] = time.monotonic()

        future.add_done_callback(resolved)

    def check(self, seed: int) -> tuple[int, int]:
        """Assert every future resolved in time; returns (succeeded, failed)."""
        limit_s = DELIVERY_TIMEOUT_MS / 1000 + SLACK_S
        now = time.monotonic()
        with self._lock:
            entries = list(self._entries)
        unresolved = [e for e in entries if e[1] is None]
        late = sorted((e[1] - e[0] for e in entries if e[1] is not None
                       and e[1] - e[0] > limit_s), reverse=True)
        assert not unresolved, (
            f"seed {seed}: {len(unresolved)} of {len(entries)} futures unresolved, the oldest "
            f"sent {now - min(e[0] for e in unresolved):.1f} s ago")
        assert not late, (f"seed {seed}: {len(late)} futures resolved after more than "
                          f"{limit_s} s: {[round(s, 2) for s in late[:5]]}")
        failed = sum(1 for e in entries if e[2] is not None)
        return len(entries) - failed, failed


class BrokerChaos:
    """The seeded script of what happens to the broker between produce calls."""

    def __init__(self, broker, rng: random.Random) -> None:
        self.broker = broker
        self.rng = rng
        self.actions: list[str] = []

    def one_cycle(self) -> None:
        rng, broker = self.rng, self.broker
        time.sleep(rng.uniform(0.05, 0.8))  # a random point of the produce stream
        if rng.random() < 0.3:
            self.actions.append("freeze")
            broker.process.send_signal(signal.SIGSTOP)  # accepts, never answers
            time.sleep(rng.uniform(0.3, 3.0))
            broker.kill()  # SIGKILL ends a stopped process too
        else:
            self.actions.append("kill")
            broker.kill()
        time.sleep(rng.choice([0.0, rng.uniform(0.05, 0.5), rng.uniform(1.0, 3.0)]))
        if rng.random() < 0.35:  # killed again while starting: producers connect meanwhile
            self.actions.append("kill-while-starting")
            broker.launch()
            time.sleep(rng.uniform(0.0, 0.6))
            broker.kill()
        broker.start()

    def run(self, cycles: int) -> None:
        try:
            for _ in range(cycles):
                self.one_cycle()
            time.sleep(self.rng.uniform(0.2, 0.8))
        finally:
            self.actions.append("gone")
            self.resume()
            self.broker.kill()  # gone for good

    def resume(self) -> None:
        if self.broker.running:
            self.broker.process.send_signal(signal.SIGCONT)


def make_seed() -> int:
    return int(os.environ.get("TSLOG_TEST_SEED") or random.randrange(2**32))


def producer_options(retries, idempotence: bool) -> dict:
    options = dict(retries=retries, delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
                   request_timeout_ms=5000, retry_backoff_ms=50, linger_ms=2,
                   max_block_ms=1000)
    if idempotence:
        options.update(acks="all", enable_idempotence=True)
    return options


def create_topic(broker) -> None:
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=PARTITIONS)


def settle_and_check(resolutions: Resolutions, seed: int, actions: list[str]) -> None:
    print(f"seed {seed}: {' '.join(actions)}")
    deadline = time.monotonic() + DELIVERY_TIMEOUT_MS / 1000 + SLACK_S + 0.5
    while time.monotonic() < deadline:  # the last sends' deadlines, then look
        time.sleep(0.1)
    succeeded, failed = resolutions.check(seed)
    print(f"seed {seed}: {succeeded} futures succeeded, {failed} failed")
    assert succeeded > 0 and failed > 0, "the script should have made both outcomes"


@pytest.mark.parametrize("retries", [0, None], ids=["retries=0", "retries=default"])
def test_sync_producer_futures_resolve_by_the_delivery_deadline(broker, retries):
    seed = make_seed()
    rng = random.Random(seed)
    create_topic(broker)
    resolutions = Resolutions()
    stop = threading.Event()
    producer = Producer(broker.bootstrap, **producer_options(retries, False))

    def produce() -> None:
        sender_rng = random.Random(seed + 1)
        while not stop.is_set():
            sent_at = time.monotonic()
            try:
                future = producer.send(TOPIC, b"x" * sender_rng.randrange(200),
                                       partition=sender_rng.randrange(PARTITIONS))
            except (TslogError, TimeoutError):  # refused at once: no future to wait for
                time.sleep(0.01)
                continue
            resolutions.track(future, sent_at)
            if sender_rng.random() < 0.2:  # a caller that waits, as in the report
                try:
                    future.get(DELIVERY_TIMEOUT_MS / 1000 + SLACK_S + 5)
                except (TslogError, TimeoutError):
                    pass
            time.sleep(sender_rng.uniform(0, 0.004))

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    chaos = BrokerChaos(broker, rng)
    try:
        chaos.run(CYCLES)
        time.sleep(0.5)  # sending on to a broker that is gone for good
    finally:
        stop.set()
        thread.join(30)
        chaos.resume()
    try:
        settle_and_check(resolutions, seed, chaos.actions)
    finally:
        started = time.monotonic()
        producer.close()
        assert time.monotonic() - started < DELIVERY_TIMEOUT_MS / 1000 + 5


@pytest.mark.parametrize("retries,idempotence", [(0, False), (None, False), (None, True)],
                         ids=["retries=0", "retries=default", "idempotent"])
async def test_async_producer_futures_resolve_by_the_delivery_deadline(broker, retries,
                                                                        idempotence):
    seed = make_seed()
    rng = random.Random(seed)
    await asyncio.to_thread(create_topic, broker)
    resolutions = Resolutions()
    stop = asyncio.Event()
    producer = AsyncProducer(broker.bootstrap, **producer_options(retries, idempotence))
    await producer.start()

    async def produce() -> None:
        sender_rng = random.Random(seed + 1)
        while not stop.is_set():
            sent_at = time.monotonic()
            try:
                if sender_rng.random() < 0.2:
                    future = producer.send_batch(TOPIC, [b"b"] * sender_rng.randrange(1, 50))
                else:
                    future = producer.send(TOPIC, b"x" * sender_rng.randrange(200),
                                           partition=sender_rng.randrange(PARTITIONS))
            except TslogError:
                await asyncio.sleep(0.01)
                continue
            resolutions.track(future, sent_at)
            if sender_rng.random() < 0.2:
                try:
                    await asyncio.wait_for(future, DELIVERY_TIMEOUT_MS / 1000 + SLACK_S + 5)
                except (TslogError, asyncio.TimeoutError):
                    pass
            await asyncio.sleep(sender_rng.uniform(0, 0.004))

    task = asyncio.ensure_future(produce())
    chaos = BrokerChaos(broker, rng)
    try:
        await asyncio.to_thread(chaos.run, CYCLES)
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        chaos.resume()
    try:
        await asyncio.to_thread(settle_and_check, resolutions, seed, chaos.actions)
    finally:
        await asyncio.wait_for(producer.close(), DELIVERY_TIMEOUT_MS / 1000 + 5)
