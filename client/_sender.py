"""The producer's sender: drains ready batches into pipelined Produce requests.

``Sender`` is an object of its own that ``AsyncProducer`` makes on its loop and holds: it is
handed the accumulator, the cluster, the idempotence state and the sticky partitioner it
shares with the producer, its settings (``SendSettings``) and a callback that appends the
records that waited for metadata; it owns its task, its helper tasks (producer id, metadata,
connections) and its wake-up event. See ``_producer.py`` for the theory of operation.

The sender's one rule for deadlines: a round first expires every batch past its delivery
deadline (``RecordAccumulator.expire``), and the only thing it ever waits for is its wake-up
event, with a timeout no later than the next deadline. Nothing slower runs inline: the
producer id, metadata and connections are fetched by tasks of their own that wake it when
done. So every future resolves by its deadline whatever the broker does (killed mid-request,
while connecting, frozen, gone), without trusting any one error path to fire.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ._accumulator import (
    ENVELOPE_BYTES,
    LOOKING_NOW,
    REQUEST_OVERHEAD_BYTES,
    ProducerBatch,
    RecordAccumulator,
)
from ._cluster import Cluster, failed_as_leader
from ._idempotence import Idempotence
from ._partitioner import StickyPartitioner
from ._types import TopicPartition
from .errors import (
    REQUEST_SIZE_HINT,
    ConnectionLostError,
    DeliveryTimeoutError,
    InvalidResponseError,
    MessageTooLargeError,
    TslogError,
    error_for,
)

_PRODUCE = ApiKey.PRODUCE  # read per request (see ApiKey)

log = logging.getLogger("tslog.client._producer")


def _partition_error(code: int) -> BaseException | None:
    return error_for(code)() if code else None


class SendSettings(NamedTuple):
    """The producer's settings the sender applies (``AsyncProducer``'s arguments)."""

    acks: int
    compression: int
    request_timeout_ms: int
    max_request_size: int
    retries: int
    delivery_timeout_ms: int


class Sender:
    """One producer's sender task and the tasks it starts. Made on the producer's loop.

    Args:
        resolve_deferred: appends the records that waited for metadata, when their topic
            is known; returns when to look again (monotonic seconds) or None.
        is_closed: whether the producer has closed (a closed producer retries nothing).
    """

    def __init__(self, accumulator: RecordAccumulator, cluster: Cluster,
                 idempotence: Idempotence | None, sticky: StickyPartitioner,
                 settings: SendSettings, resolve_deferred: Callable[[], float | None],
                 is_closed: Callable[[], bool]) -> None:
        self._accumulator = accumulator
        self._cluster = cluster
        self._idempotence = idempotence
        self._sticky = sticky
        self._settings = settings
        self._resolve_deferred = resolve_deferred
        self._is_closed = is_closed
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wakeup = asyncio.Event()
        self._metadata_task: asyncio.Task | None = None
        self._poll_task: asyncio.Task | None = None  # a later metadata refresh
        self._init_task: asyncio.Task | None = None  # InitProducerId (idempotence)
        self._connecting_nodes: set[int] = set()
        self._task = self._loop.create_task(self._run())

    def wake(self) -> None:
        """Make the sender look again now; callable from any thread."""
        if threading.get_ident() == self._loop_thread:
            self._wakeup.set()
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wakeup.set)

    async def stop(self) -> None:
        """Cancel the sender and every task it started, and wait for them."""
        self.wake()
        tasks = [task for task in (self._task, self._init_task, self._metadata_task,
                                   self._poll_task) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def refresh_metadata(self) -> None:
        """Refresh the cluster's metadata in a task of its own, waking the sender after."""
        if self._metadata_task is None or self._metadata_task.done():
            self._metadata_task = asyncio.ensure_future(self._refresh_and_wake())

    async def _run(self) -> None:
        while True:
            try:
                await self._run_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug: fail what is queued rather than hang forever
                log.exception("producer sender failed")
                with self._accumulator.lock:
                    self._accumulator.abort_all(exc)
                await asyncio.sleep(self._cluster.retry_backoff_ms / 1000)

    async def _run_once(self) -> None:
        """One round: resolve deferred records, send what is ready, sleep until needed."""
        self._wakeup.clear()
        # This round looks (``ready``) before it sleeps: a batch started meanwhile is seen.
        self._accumulator.next_look = LOOKING_NOW
        next_deadline = self._expire_batches(time.monotonic())
        if self._cluster.metadata_stale():  # e.g. partitions were added
            self.refresh_metadata()
        next_time = self._resolve_deferred()
        idempotence = self._idempotence
        if idempotence is not None and not idempotence.ready:
            self._accumulator.next_look = None  # it does not look this round
            self._init_producer_id()  # wakes this loop when done; batches wait meanwhile
            sent, ready_time = False, None
        else:
            sent, ready_time = self._send_ready(time.monotonic())
        if sent:
            await asyncio.sleep(0)  # let responses and appends in, then look again
            return
        for time_due in (ready_time, next_deadline):
            if time_due is not None and (next_time is None or time_due < next_time):
                next_time = time_due
        # Not asyncio.wait_for: before Python 3.12 it swallows a cancellation that arrives
        # in the same tick as the wake-up (close() does both), and this loop then slept
        # forever with close() waiting on it. A timer that sets the event cannot.
        timer = (None if next_time is None else asyncio.get_running_loop().call_later(
            max(0.0, next_time - time.monotonic()), self._wakeup.set))
        try:
            await self._wakeup.wait()
        finally:
            if timer is not None:
                timer.cancel()

    def _expire_batches(self, now: float) -> float | None:
        """Fail every batch past its delivery deadline; the next deadline (or None)."""
        with self._accumulator.lock:
            expired, next_deadline = self._accumulator.expire(now)
        for batch, queued in expired:
            tp = batch.tp
            where = ("never sent" if queued and not batch.attempts
                     else "waiting to retry" if queued
                     else "sent, no answer yet: it may still have been written")
            self._finish(batch, error=DeliveryTimeoutError(
                f"{tp.topic}-{tp.partition}: {batch.record_count} records not acknowledged "
                f"within delivery_timeout_ms {self._settings.delivery_timeout_ms} ({where})"))
        return next_deadline

    def _init_producer_id(self) -> None:
        """Get a producer id in a task of its own (retrying), waking the sender when done."""
        if self._init_task is not None and not self._init_task.done():
            return

        async def init() -> None:
            try:
                await self._idempotence.init(self._cluster)
            except TslogError as exc:
                if exc.retriable:
                    log.debug("InitProducerId failed: %r", exc)
                    await asyncio.sleep(self._cluster.backoff_s(0))
                    return
                # A denial (or another lasting refusal): every waiting send fails with it
                # now, not at its delivery timeout; a later send asks again, once a second
                # at most (an ACL may have been added meanwhile).
                log.warning("producer id refused: %s", exc)
                with self._accumulator.lock:
                    self._accumulator.abort_all(exc)
                await asyncio.sleep(self._cluster.retry_backoff_max_ms / 1000)
            finally:
                self.wake()

        self._init_task = asyncio.ensure_future(init())

    def _send_ready(self, now: float) -> tuple[bool, float | None]:
        accumulator, cluster = self._accumulator, self._cluster
        idempotence = self._idempotence
        with accumulator.lock:
            ready, next_time = accumulator.ready(now)
            if idempotence is not None:  # in order: see _idempotence.py
                ready = [tp for tp in ready if idempotence.may_send(tp, accumulator.peek(tp))]
        by_node: dict[int, list[TopicPartition]] = collections.defaultdict(list)
        for tp in ready:
            leader = cluster.leader_for(tp)
            if leader is None:
                self._retry_head(tp, error_for(5)(f"no leader known for {tp.topic}-{tp.partition}"))
                self.refresh_metadata()
            else:
                by_node[leader].append(tp)
        sent = False
        for node_id, tps in by_node.items():
            conn = cluster.open_connection(node_id)
            if conn is None:
                self._connect(node_id, tps)
                if cluster.is_suspect(node_id):  # it failed: look for its successor meanwhile
                    self._poll_metadata()
                continue
            if conn.on_ready is None:
                conn.on_ready = self.wake
            if conn.has_capacity():
                self._send_request(conn, node_id, tps)
                sent = True
        if not sent and not accumulator.sleeping(next_time):
            self._wakeup.set()  # a batch started since it looked: look again first
        return sent, next_time

    def _send_request(self, conn, node_id: int, tps: list[TopicPartition]) -> None:
        accumulator = self._accumulator
        batches: list[ProducerBatch] = []
        size = 0
        with accumulator.lock:
            for tp in tps:  # as many batches as one request of max_request_size carries
                head = accumulator.peek(tp)
                if head is None:
                    continue
                if (batches and size + head.size_bytes + REQUEST_OVERHEAD_BYTES
                        > self._settings.max_request_size):
                    break
                batch = accumulator.pop(tp)
                batches.append(batch)
                size += batch.size_bytes + REQUEST_OVERHEAD_BYTES
                self._sticky.batch_closed(tp.topic, tp.partition,
                                          self._cluster.partition_count(tp.topic) or 1)
        topics: dict[str, list] = collections.defaultdict(list)
        sendable = []
        idempotence = self._idempotence
        for batch in batches:
            try:
                records = batch.build(self._settings.compression, idempotence)
            except (TypeError, ValueError) as exc:
                self._finish(batch, error=exc)
                continue
            if len(records) + ENVELOPE_BYTES > self._settings.max_request_size:
                # Headers can outgrow their estimate; the broker would close the connection.
                self._finish(batch, error=MessageTooLargeError(
                    f"a batch of {len(records)} bytes does not fit in a request of "
                    f"max_request_size {self._settings.max_request_size}" + REQUEST_SIZE_HINT))
                continue
            topics[batch.tp.topic].append({"partition": batch.tp.partition, "records": records})
            sendable.append(batch)
        if not sendable:
            return
        if idempotence is not None:
            idempotence.sent(sendable)
        body = {"acks": self._settings.acks, "timeout_ms": self._settings.request_timeout_ms,
                "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]}
        future = conn.send_nowait(_PRODUCE, body,
                                  timeout_ms=self._settings.request_timeout_ms + 5_000)
        future.add_done_callback(lambda f: self._on_response(f, sendable, node_id))

    def _on_response(self, future: asyncio.Future, batches: list[ProducerBatch],
                     node_id: int) -> None:
        idempotence = self._idempotence
        if idempotence is not None:
            idempotence.answered(batches)
        error = (ConnectionLostError("produce request cancelled") if future.cancelled()
                 else future.exception())
        self._judge_leader(node_id, future, error)
        if error is not None:
            for batch in batches:
                self._retry_or_fail(batch, error)
        elif self._settings.acks == 0:
            for batch in batches:
                self._finish(batch, result=(-1, -1))
        else:
            answers = {(t["topic"], p["partition"]): p
                       for t in future.result()["topics"] for p in t["partitions"]}
            for batch in batches:
                answer = answers.get(batch.tp)
                if answer is None:
                    self._finish(batch, error=InvalidResponseError(
                        f"no answer for {batch.tp.topic}-{batch.tp.partition}"))
                elif answer["error_code"]:
                    code = answer["error_code"]
                    refusal = _refusal(code, batch, answer.get("error_message"))
                    self._retry_or_fail(batch, refusal, transient=(
                        code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and idempotence is not None
                        and idempotence.transient_out_of_order(batch)))
                else:
                    self._finish(batch, result=(answer["base_offset"], answer["log_append_time"]))
        self.wake()

    def _judge_leader(self, node_id: int, future: asyncio.Future, error) -> None:
        """Tell the cluster whether ``node_id`` served this Produce as a leader should; if
        not, refresh the metadata (as Kafka does after a request timeout too), which then
        asks another broker (see _cluster)."""
        if error is None and future.result() is not None:  # None: acks = 0
            codes = (p["error_code"] for t in future.result()["topics"] for p in t["partitions"])
            error = next((e for e in map(_partition_error, codes) if failed_as_leader(e)), None)
        if error is not None and failed_as_leader(error):
            self._cluster.suspect(node_id)
            self.refresh_metadata()
        elif error is None:
            self._cluster.vouch(node_id)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException, *,
                       transient: bool = False) -> None:
        """Retry ``batch`` if ``error`` is retriable (or ``transient`` says so here) and it
        has attempts and time left; fail it otherwise."""
        if batch.future.done():  # expired while in flight: already failed and released
            return
        if (isinstance(error, TslogError) and (error.retriable or transient)
                and not self._is_closed()
                and batch.attempts < self._settings.retries and time.monotonic() < batch.deadline):
            batch.attempts += 1
            retry_at = time.monotonic() + self._cluster.backoff_s(batch.attempts - 1)
            with self._accumulator.lock:
                self._accumulator.reenqueue(batch, retry_at)
            if error.invalid_metadata:
                self.refresh_metadata()
            log.debug("retrying %s after %r", batch.tp, error)
        else:
            self._finish(batch, error=error)

    def _finish(self, batch: ProducerBatch, *, result=None, error=None) -> None:
        idempotence = self._idempotence
        if error is not None:
            if idempotence is not None and batch.built:
                idempotence.resolved(batch)
                if not batch.future.done():
                    idempotence.failed_for_good(error)
            batch.fail(error)
        else:
            if idempotence is not None:
                idempotence.acknowledged(batch)
            batch.complete(*result)
        with self._accumulator.lock:
            self._accumulator.done(batch)

    def _retry_head(self, tp: TopicPartition, error: TslogError) -> None:
        """The next batch of ``tp`` could not even be sent: count it as a failed attempt."""
        with self._accumulator.lock:
            batch = self._accumulator.pop(tp)
        if batch is not None:
            self._retry_or_fail(batch, error)

    def _poll_metadata(self) -> None:
        """Refresh metadata once it is ``retry_backoff_max_ms`` old: while the sender waits
        to connect to a leader that failed, so it sends to a successor as soon as another
        broker names one. A task of its own, so an urgent refresh never waits for it."""
        if self._poll_task is None or self._poll_task.done():
            self._poll_task = asyncio.ensure_future(self._refresh_later())

    async def _refresh_later(self) -> None:
        await asyncio.sleep(max(0.0, self._cluster.retry_backoff_max_ms / 1000
                                - self._cluster.metadata_age_s()))
        self.refresh_metadata()

    async def _refresh_and_wake(self) -> None:
        try:
            await self._cluster.refresh_metadata()
        except TslogError as exc:
            log.debug("metadata refresh failed: %r", exc)
        self.wake()

    def _connect(self, node_id: int, tps: list[TopicPartition]) -> None:
        async def connect() -> None:
            try:
                await self._cluster.connection(node_id)
            except TslogError as exc:
                log.debug("cannot connect to broker %s: %r", node_id, exc)
                for tp in tps:
                    self._retry_head(tp, exc)
                self.refresh_metadata()
            finally:
                # Before the wake-up: a sender woken while the node still counted as
                # connecting would start no new attempt and sleep with batches queued.
                self._connecting_nodes.discard(node_id)
                self.wake()
        if node_id not in self._connecting_nodes:
            self._connecting_nodes.add(node_id)
            asyncio.ensure_future(connect())


def _refusal(code: int, batch: ProducerBatch, message: str | None) -> TslogError:
    """The broker's refusal of ``batch`` with the broker's ``message`` if it sent one; a size
    refusal names the sizes, the limit and what to change, since the code's own text
    ("larger than the broker accepts") names none of them."""
    if code != ErrorCode.MESSAGE_TOO_LARGE:
        error = error_for(code)(message)
    else:
        topic, partition = batch.tp
        reason = message or (f"a batch of {batch.size_bytes} bytes is larger than the broker "
                             f"accepts for that topic")  # a broker that does not say its limit
        error = error_for(code)(
            f"produce to {topic}-{partition} refused: {reason}: raise the topic's "
            f"max.message.bytes (tslog topics alter-config {topic} --config "
            f"max.message.bytes=N, Admin.alter_configs) or send smaller records")
    error.broker_message = message
    return error
