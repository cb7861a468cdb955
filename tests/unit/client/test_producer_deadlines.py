"""Delivery deadlines: every batch leaves the producer, one way or another, by its deadline.

Goal: a future must resolve within ``delivery_timeout_ms`` of its ``send`` wherever its
batch is: lingering, queued behind a connection attempt, waiting for a producer id, or in
flight to a broker that never answers. Method: ``RecordAccumulator.expire`` driven with
explicit times; then ``AsyncProducer``s whose metadata is filled in by hand, pointing at a
port nobody listens on (broker gone) or at a tiny real TCP peer that accepts and reads but
never answers (a frozen broker: the connection stays open, the request never times out
before the deadline). The real-broker version with SIGKILLs is
tests/integration/test_producer_futures_resolve.py.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from tslog.client._accumulator import RecordAccumulator
from tslog.client._types import PartitionInfo, TopicPartition
from tslog.client.aio import AsyncProducer
from tslog.client.errors import DeliveryTimeoutError, RequestTimedOutError, TslogError
from tests.helpers.broker_process import free_port

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)
DELIVERY_TIMEOUT_MS = 400
SLACK_S = 0.5  # the loop's scheduling on a shared two-core machine


def test_expire_takes_batches_past_their_deadline_from_every_queue():
    acc = RecordAccumulator(batch_size=16 + 1, linger_ms=0, delivery_timeout_ms=1000)
    acc.append(TP0, b"1", None, 1, None, now=0.0)  # closed at once (full), deadline 1.0
    acc.append(TP0, b"2", None, 1, None, now=0.5)  # closed, deadline 1.5
    in_flight = acc.pop(TP0)  # the first one, now "sent"
    acc.append(TP1, b"", None, 1, None, now=2.0)  # open, deadline 3.0
    assert acc.expire(0.99) == ([], 1.0)
    expired, next_deadline = acc.expire(1.0)
    assert expired == [(in_flight, False)] and next_deadline == 1.5
    with acc.lock:
        acc.done(in_flight)
    [(queued, was_queued)], next_deadline = acc.expire(1.6)
    assert was_queued and queued.tp == TP0 and TP0 not in acc._closed
    assert next_deadline == 3.0
    with acc.lock:
        acc.done(queued)
    open_batch = acc.peek(TP1)
    acc.shorten_deadline(open_batch, 2.5)  # a record that waited for metadata joined it
    assert acc.expire(2.4) == ([], 2.5)
    assert acc.expire(2.5) == ([(open_batch, True)], None)
    assert acc.peek(TP1) is None and acc.ready(3.0) == ([], None)


class SilentPeer:
    """Accepts connections and reads everything, answers nothing (a frozen broker)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() wakes to see ``stopped``
        self.stopped = threading.Event()
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self.received = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self.connections.append(conn)
            threading.Thread(target=self._read, args=(conn,), daemon=True).start()

    def _read(self, conn: socket.socket) -> None:
        try:
            while data := conn.recv(65536):
                self.received += len(data)
        except OSError:
            pass

    def close(self) -> None:
        self.stopped.set()
        self._thread.join(5)
        self.listener.close()
        for conn in self.connections:
            conn.close()


def producer_for(port: int, **options) -> AsyncProducer:
    """A producer that believes broker 0 at 127.0.0.1:``port`` leads topic "t" (3 parts)."""
    options = {"delivery_timeout_ms": DELIVERY_TIMEOUT_MS, "linger_ms": 1,
               "retry_backoff_ms": 20, "max_block_ms": 200, **options}
    producer = AsyncProducer(f"127.0.0.1:{port}", **options)
    cluster = producer._cluster
    cluster.brokers = {0: ("127.0.0.1", port)}
    cluster.topics = {"t": {p: PartitionInfo(p, 0, 0, [0], [0], 0) for p in range(3)}}
    cluster.topic_errors = {"t": 0}
    cluster._metadata_time = time.monotonic()
    return producer


async def send_in_bursts(producer: AsyncProducer, seconds: float) -> list:
    """Send bursts across partitions (the caller of the report: a few sends, then wait for
    each); returns [(sent_at, future, resolved_at)], ``resolved_at`` filled in by the
    future's done callback."""
    sent = []
    end = time.monotonic() + seconds
    burst = 0
    while time.monotonic() < end:
        burst += 1
        futures = []
        for i in range(1 + burst % 4):
            sent_at = time.monotonic()
            future = (producer.send_batch("t", [b"b%d" % i] * 3) if burst % 5 == 0
                      else producer.send("t", b"v", partition=(burst + i) % 3))
            resolved_at: list[float] = []
            future.add_done_callback(lambda _, at=resolved_at: at.append(time.monotonic()))
            futures.append(future)
            sent.append((sent_at, future, resolved_at))
        for future in futures[: burst % 3]:
            try:
                await asyncio.wait_for(future, DELIVERY_TIMEOUT_MS / 1000 + SLACK_S + 2)
            except (TslogError, asyncio.TimeoutError):
                pass
        await asyncio.sleep(0.005 * (burst % 3))
    return sent


async def assert_resolved_in_time(sent: list) -> list[BaseException]:
    """Every future resolved by its send time + delivery timeout + slack; their errors."""
    limit_s = DELIVERY_TIMEOUT_MS / 1000 + SLACK_S
    last_deadline = max(sent_at for sent_at, _, _ in sent) + limit_s
    await asyncio.sleep(max(0.0, last_deadline - time.monotonic()) + 0.05)
    unresolved = [future for _, future, resolved_at in sent if not resolved_at]
    assert not unresolved, f"{len(unresolved)} of {len(sent)} futures unresolved"
    late = [round(resolved_at[0] - sent_at, 3) for sent_at, _, resolved_at in sent
            if resolved_at[0] - sent_at > limit_s]
    assert not late, f"resolved later than {limit_s} s after send: {late[:5]}"
    return [future.exception() for _, future, _ in sent]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("retries", [0, None], ids=["retries=0", "retries=default"])
async def test_broker_gone_every_future_fails_by_its_deadline(retries):
    producer = producer_for(free_port(), retries=retries)  # nobody listens: refused
    try:
        sent = await send_in_bursts(producer, 1.5)
        errors = await assert_resolved_in_time(sent)
        assert errors and all(isinstance(error, TslogError) for error in errors)
    finally:
        await asyncio.wait_for(producer.close(), 5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("options", [{"retries": 0, "enable_idempotence": False},
                                     {"retries": None, "enable_idempotence": False},
                                     {"acks": "all", "enable_idempotence": True}],
                         ids=["retries=0", "retries=default", "idempotent"])
async def test_frozen_broker_in_flight_batches_expire_at_the_deadline(options):
    peer = SilentPeer()
    # The request timeout alone would leave each future waiting 20 s.
    producer = producer_for(peer.port, request_timeout_ms=15_000, **options)
    try:
        sent = await send_in_bursts(producer, 1.0)
        errors = await assert_resolved_in_time(sent)
        assert all(isinstance(error, DeliveryTimeoutError) for error in errors), errors[:3]
        assert all(isinstance(error, RequestTimedOutError) for error in errors)
        if not options["enable_idempotence"]:  # else stuck at InitProducerId: unsent
            assert peer.received > 0
            assert any("may still have been written" in str(error) for error in errors)
    finally:
        await asyncio.wait_for(producer.close(), 5)
        peer.close()
