"""Grouping produced records into batches per partition (sans-IO, thread-safe).

Why batches: the broker's cost and the wire's cost are per batch, not per record, so the
producer collects records for ``linger_ms`` or until ``batch_size`` bytes, whichever comes
first, and encodes each batch with one ``build_batch`` call (no per-record encoding loop).

Why a lock: the sync ``Producer`` appends from the caller's thread while the sender runs on the
client's event loop thread. ``append`` holds the lock for a few dict operations and tells the
caller whether the sender must be woken: a batch filled up, or a new batch started its
linger clock and the sender would not look again by the time it is due (``next_look``, the
time of the sender's next look, which ``ready`` records). A producer writing round-robin over
many partitions starts a batch with nearly every record: waking the loop for each (a write to
its self-pipe, and a round of the sender) was most of such a send's cost.

Record futures: a ``RecordFuture`` is (batch, index). The batch owns one
``concurrent.futures.Future`` resolved with (base_offset, log_append_time); the record's
metadata is derived from it (offset = base_offset + index). One future per batch keeps
``send`` cheap and works across threads, awaited from asyncio or waited on with ``get()``.
``send_batch`` skips the per-record work entirely: its lists become a batch as they are
(``append_batch``), and its ``BatchFuture`` makes metadata only when asked. ``send_section``
goes further: its records section is encoded already (``append_section``), and ``build``
only adds the header with the producer id and sequence.

Delivery deadlines: every batch gets ``deadline = created + delivery_timeout`` when it is
made (a record joining an open batch inherits the batch's, earlier than its own), and
``expire`` takes every batch past it out of the queues, whether it waits for linger, for a
retry, for a connection, or for a response. Why here and not in the sender's error paths:
those paths each assumed some event (a response, a timeout, a connect failure, a wake-up)
would come; a deadline the sender checks every round, and sleeps no longer than, needs
none. ``_next_deadline`` is a lower bound of the incomplete batches' deadlines, so the scan
runs about once per deadline, not once per round.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import threading
import time

from tslog.protocol.batch_header import COMPRESSION_NONE
from tslog.protocol.records import Section, build_batch, seal_section

from ._outcome_futures import RecordFuture
from ._types import RecordMetadata, TopicPartition

RECORD_OVERHEAD_BYTES = 16  # create time + key length + value length per record
# What a one-batch Produce request carries besides the records' own bytes: the msgpack
# envelope (a topic name is <= 249 bytes), then the 80-byte batch header and 12-byte section
# sizes. A batch is capped at max_request_size minus this, so its request fits the frame.
ENVELOPE_BYTES = 420
REQUEST_OVERHEAD_BYTES = ENVELOPE_BYTES + 92
_SEND_ORDER = itertools.count()
LOOKING_NOW = float("-inf")  # a ``next_look`` before any batch's linger deadline


class ProducerBatch:
    """Records for one partition that travel (and succeed or fail) together."""

    __slots__ = ("tp", "values", "keys", "create_times", "headers", "section", "size_bytes",
                 "created", "deadline", "future", "attempts", "retry_at", "_built",
                 "producer_id", "send_order")

    def __init__(self, tp: TopicPartition, now: float, deadline: float = float("inf")) -> None:
        self.tp = tp
        self.values: list = []
        self.keys: list | None = None  # created at the first non-null key
        self.create_times: list[int] = []
        self.headers: list | None = None
        self.section: Section | None = None  # a pre-encoded records section (send_section)
        self.size_bytes = 0
        self.created = now
        self.deadline = deadline  # time.monotonic() by which it must succeed or fail
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self.attempts = 0
        self.retry_at = 0.0
        self._built: bytes | None = None
        self.producer_id = -1  # the idempotent producer id it is stamped with
        self.send_order: int | None = None  # when it was first encoded: retries keep order

    def build(self, compression: int = COMPRESSION_NONE, idempotence=None) -> bytes:
        """The encoded batch, built once (a retry resends the same bytes, and so the same
        producer id and sequence when ``idempotence`` stamps it)."""
        if self._built is None:
            if self.send_order is None:
                self.send_order = next(_SEND_ORDER)
            producer = (-1, -1, -1) if idempotence is None else idempotence.stamp(self)
            self.producer_id = producer[0]
            if self.section is not None:
                self._built = seal_section(self.section, compression, *producer)
                return self._built
            self._built = build_batch(self.values, keys=self.keys, create_times=self.create_times,
                                      headers=self.headers, compression=compression,
                                      producer_id=producer[0], producer_epoch=producer[1],
                                      base_sequence=producer[2])
        return self._built

    def forget_encoding(self) -> None:
        """Encode again at the next attempt: its producer id was replaced before the leader
        wrote it, so it needs the new id and a new sequence."""
        self._built = None

    @property
    def record_count(self) -> int:
        return len(self.values) if self.section is None else self.section.record_count

    @property
    def built(self) -> bool:
        return self._built is not None

    def complete(self, base_offset: int, log_append_time: int) -> None:
        if not self.future.done():
            self.future.set_result((base_offset, log_append_time))

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

    def metadata(self, index: int) -> RecordMetadata:
        base_offset, log_append_time = self.future.result()
        offset = base_offset + index if base_offset >= 0 else -1
        create_times = self.create_times  # a list, or one int for a whole send_batch
        if self.section is not None:  # a send_section: the section holds the times
            create_time = self.section.create_time(index)
        elif type(create_times) is int:
            create_time = create_times
        else:
            create_time = create_times[index]
        return RecordMetadata(self.tp.topic, self.tp.partition, offset, log_append_time,
                              create_time)


class RecordAccumulator:
    """Open batches per partition, closed batches waiting to be sent, and byte accounting."""

    def __init__(self, batch_size: int, linger_ms: float,
                 delivery_timeout_ms: float = 120_000) -> None:
        self.batch_size = batch_size
        self.linger_s = linger_ms / 1000
        self.delivery_timeout_s = delivery_timeout_ms / 1000
        self.lock = threading.Lock()
        self.space = threading.Condition(self.lock)
        self.buffered_bytes = 0
        self.flushing = 0  # > 0: ignore linger, send everything now
        self._open: dict[TopicPartition, ProducerBatch] = {}
        self._closed: dict[TopicPartition, collections.deque] = {}
        self.incomplete: set[ProducerBatch] = set()
        self._next_deadline: float | None = None  # <= every incomplete batch's deadline
        # When the sender will look at the queues again at the latest (``ready`` sets it, the
        # sender clears it when a round starts): a new batch due later need not wake it.
        self.next_look: float | None = None
        self.started = 0  # batches ``append`` has started: did one start since a look?
        self.started_at_look = 0

    def append(self, tp: TopicPartition, value, key, create_time: int, headers,
               now: float | None = None) -> tuple[RecordFuture, bool, ProducerBatch | None]:
        """Queue one record. Returns (future, wake_sender, batch closed by this call or None).

        The hot path of every ``send``: kept flat (no helper calls) on purpose.
        """
        size = RECORD_OVERHEAD_BYTES if value is None else RECORD_OVERHEAD_BYTES + len(value)
        if key is not None:
            size += len(key)
        if headers:
            size += sum(len(name) + len(data) + 4 for name, data in headers)
        closed = None
        batch = self._open.get(tp)
        if batch is None or (batch.size_bytes + size > self.batch_size and batch.values):
            if batch is not None:
                closed = self._close(tp, batch)
            if now is None:
                now = time.monotonic()
            batch = self._open[tp] = ProducerBatch(tp, now, now + self.delivery_timeout_s)
            self._track(batch)
            self.started += 1
            look = self.next_look
            wake = look is None or look > now + self.linger_s  # it would look too late
            if wake:  # woken, it looks at once: the batches started until then need no wake
                self.next_look = LOOKING_NOW
        else:
            wake = False
        values = batch.values
        index = len(values)
        values.append(value)
        batch.create_times.append(create_time)
        if key is not None:
            if batch.keys is None:
                batch.keys = [None] * index
            batch.keys.append(key)
        elif batch.keys is not None:
            batch.keys.append(None)
        if headers:
            if batch.headers is None:
                batch.headers = [None] * index
            batch.headers.append(list(headers))
        elif batch.headers is not None:
            batch.headers.append(None)
        batch.size_bytes += size
        self.buffered_bytes += size
        if batch.size_bytes >= self.batch_size:
            closed = self._close(tp, batch)
            wake = True
        return RecordFuture(batch, index), wake, closed

    def append_batch(self, tp: TopicPartition, values: list, keys: list | None, create_times,
                     headers: list | None, size: int, now: float | None = None
                     ) -> tuple[ProducerBatch, ProducerBatch | None]:
        """Queue ready-made record lists as one batch of their own, to be sent at once.

        The partition's open batch (records sent before) is closed first, so order holds.
        Returns (the new batch, the open batch closed by this call or None).
        """
        batch, closed = self._own_batch(tp, size, now)
        batch.values = values
        batch.keys = keys
        batch.create_times = create_times
        batch.headers = headers
        return batch, closed

    def append_section(self, tp: TopicPartition, section: Section, now: float | None = None
                       ) -> tuple[ProducerBatch, ProducerBatch | None]:
        """Queue a pre-encoded section as one batch of its own, as ``append_batch`` does
        with lists."""
        batch, closed = self._own_batch(tp, section.size, now)
        batch.section = section
        return batch, closed

    def _own_batch(self, tp: TopicPartition, size: int, now: float | None
                   ) -> tuple[ProducerBatch, ProducerBatch | None]:
        """A new closed batch of ``size`` bytes queued behind the partition's open batch
        (closed first, so order holds): (the batch, the open batch closed or None)."""
        closed = None
        open_batch = self._open.get(tp)
        if open_batch is not None:
            closed = self._close(tp, open_batch)
        if now is None:
            now = time.monotonic()
        batch = ProducerBatch(tp, now, now + self.delivery_timeout_s)
        batch.size_bytes = size
        self._closed.setdefault(tp, collections.deque()).append(batch)
        self._track(batch)
        self.buffered_bytes += size
        return batch, closed

    def _track(self, batch: ProducerBatch) -> None:
        self.incomplete.add(batch)
        if self._next_deadline is None or batch.deadline < self._next_deadline:
            self._next_deadline = batch.deadline

    def shorten_deadline(self, batch: ProducerBatch, deadline: float) -> None:
        """Bring ``batch``'s deadline forward to ``deadline`` (a record that waited for
        metadata before it joined the batch keeps its own, earlier deadline)."""
        if deadline < batch.deadline:
            batch.deadline = deadline
            if self._next_deadline is None or deadline < self._next_deadline:
                self._next_deadline = deadline

    def expire(self, now: float) -> tuple[list[tuple[ProducerBatch, bool]], float | None]:
        """Take every incomplete batch whose deadline has passed out of the queues.

        Returns ([(batch, was it queued)], the earliest deadline left or None); a batch that
        was not queued is in flight (or being encoded). The caller fails each one and calls
        ``done``; a response that comes for it later finds its future already resolved.
        """
        if self._next_deadline is None or now < self._next_deadline:
            return [], self._next_deadline
        expired, next_deadline = [], None
        for batch in self.incomplete:
            if batch.deadline <= now:
                expired.append((batch, self._unqueue(batch)))
            elif next_deadline is None or batch.deadline < next_deadline:
                next_deadline = batch.deadline
        self._next_deadline = next_deadline
        return expired, next_deadline

    def _unqueue(self, batch: ProducerBatch) -> bool:
        """Remove ``batch`` from its partition's queue; False if it was in none."""
        tp = batch.tp
        if self._open.get(tp) is batch:
            del self._open[tp]
            return True
        queue = self._closed.get(tp)
        try:
            queue.remove(batch)  # batches compare by identity
        except (AttributeError, ValueError):  # no queue, or not in it
            return False
        if not queue:
            del self._closed[tp]
        return True

    def _close(self, tp: TopicPartition, batch: ProducerBatch) -> ProducerBatch:
        del self._open[tp]
        self._closed.setdefault(tp, collections.deque()).append(batch)
        return batch

    def ready(self, now: float) -> tuple[list[TopicPartition], float | None]:
        """Partitions with a batch to send now, and the next time another will be ready.

        ``_open`` is in creation order (a batch is only ever added at its end), and so in
        order of linger deadline: the walk stops at the first open batch still lingering,
        so a round costs the batches it sends, not every partition with an open batch
        (10,000 of them for a producer writing round-robin over 10,000 partitions)."""
        ready, next_time = [], None
        closed = self._closed
        for tp, queue in closed.items():
            if queue:
                head = queue[0]
                if head.retry_at <= now:
                    ready.append(tp)
                elif next_time is None or head.retry_at < next_time:
                    next_time = head.retry_at
        linger_s, flushing = self.linger_s, self.flushing
        for tp, batch in self._open.items():
            if closed.get(tp):  # sent after the closed batches before it
                continue
            due = batch.created + linger_s
            if flushing or due <= now:
                ready.append(tp)
            else:
                if next_time is None or due < next_time:
                    next_time = due
                break
        # With batches ready the sender sends now and looks again right after (or, if it
        # cannot send, records its own next look): it needs no wake-up meanwhile.
        self.next_look = LOOKING_NOW if ready else next_time
        self.started_at_look = self.started
        return ready, next_time

    def sleeping(self, next_time: float | None) -> bool:
        """The sender did not send after ``ready``: record ``next_time`` as its next look;
        False if a batch started since that look, which it must look at first (that
        batch's ``send`` saw ``LOOKING_NOW`` and did not wake it)."""
        with self.lock:
            self.next_look = next_time
            return self.started == self.started_at_look

    def peek(self, tp: TopicPartition) -> ProducerBatch | None:
        """The batch ``pop`` would return next, left in place."""
        queue = self._closed.get(tp)
        return queue[0] if queue else self._open.get(tp)

    def pop(self, tp: TopicPartition) -> ProducerBatch | None:
        """Take the next batch of ``tp`` for sending (closing the open one if it is next)."""
        queue = self._closed.get(tp)
        if queue:
            batch = queue.popleft()
            if not queue:
                del self._closed[tp]
            return batch
        batch = self._open.pop(tp, None)
        return batch

    def reenqueue(self, batch: ProducerBatch, retry_at: float) -> None:
        """Put a failed batch back near the head of its partition, to retry after
        ``retry_at``: behind the retries sent before it, ahead of the rest. Why not simply
        first: several batches of a partition fail together (a connection lost with five in
        flight) and are answered in send order, so each going first would reverse them."""
        batch.retry_at = retry_at
        queue = self._closed.setdefault(batch.tp, collections.deque())
        index = 0
        if batch.send_order is not None:
            for queued in queue:
                if queued.send_order is None or queued.send_order > batch.send_order:
                    break
                index += 1
        queue.insert(index, batch)

    def done(self, batch: ProducerBatch) -> None:
        """The batch succeeded or failed for good: release its bytes."""
        if batch in self.incomplete:
            self.incomplete.discard(batch)
            self.buffered_bytes -= batch.size_bytes
            self.space.notify_all()

    def abort_all(self, error: BaseException) -> list[ProducerBatch]:
        """Fail every batch not yet completed (close without flushing)."""
        batches = list(self.incomplete)
        self._open.clear()
        self._closed.clear()
        for batch in batches:
            batch.fail(error)
            self.done(batch)
        return batches
