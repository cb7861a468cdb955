"""AsyncProducer: batches records per partition and keeps Produce requests pipelined.

Theory of operation. ``send`` partitions the record, appends it to the accumulator and returns
a ``RecordFuture`` at once (it never waits, so a burst of sends costs a few dict operations
each). One sender task drains the accumulator: a partition is ready when its batch is full,
has lingered ``linger_ms``, or a flush is under way. Ready batches are grouped by partition
leader into one Produce request per broker, written without waiting whenever that broker's
connection has a free in-flight slot (``max_in_flight``), and resolved from the response:
record i of a batch gets offset ``base_offset + i`` and the batch's LogAppendTime.

Failures: a retriable error (leader moved, connection lost, timeout) puts the batch back at the
head of its partition with exponential backoff, up to ``retries`` times, refreshing metadata
when the error says the leader is stale. Retrying after a lost connection may write a batch
twice (at-least-once, as Kafka without idempotence); batches of one partition may reorder
only when a retry happens with several requests in flight.

Deadlines: every batch must succeed or fail within ``delivery_timeout_ms`` of its first
record's ``send``, whatever happens to connections, retries or the broker: the sender fails
it with ``DeliveryTimeoutError`` at that deadline wherever it is (queued, waiting for a
connection or a producer id, or in flight, as Kafka expires in-flight batches). See
``_sender.py``.

Records for a topic whose metadata is not loaded yet wait in ``_deferred`` until the sender
has fetched it (or fail after ``max_block_ms``, or at the delivery deadline if that is
sooner); the batch it then joins keeps that record's deadline.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Callable

from tslog.protocol.batch_header import COMPRESSION_NONE, COMPRESSION_ZSTD
from tslog.protocol.records import Section

from ._accumulator import RECORD_OVERHEAD_BYTES, REQUEST_OVERHEAD_BYTES, RecordAccumulator
from ._batching import (BATCH, SECTION, append_batch, append_section, check_batch,
                        serialize_batch)
from ._cluster import Cluster
from ._idempotence import Idempotence, require_acks_all
from ._outcome_futures import BatchFuture, RecordFuture
from ._partitioner import StickyPartitioner, key_partition
from ._sender import Sender, SendSettings
from ._types import RecordMetadata, TopicPartition
from ._outcomes import check_flushed, wait_for_outcomes
from .errors import (REQUEST_SIZE_HINT, BufferFullError, ClientClosedError, DeliveryTimeoutError,
                     MessageTooLargeError, TslogError, UnknownTopicOrPartitionError)
from .security import Security

log = logging.getLogger(__name__)

_ACKS = {"all": -1, -1: -1, 0: 0, 1: 1, "0": 0, "1": 1, "-1": -1}
_COMPRESSION = {None: COMPRESSION_NONE, "none": COMPRESSION_NONE, "zstd": COMPRESSION_ZSTD}
_BYTES = (bytes, bytearray, memoryview)
_time_ns = time.time_ns


class _DeferredRecord:
    """A record sent before its topic's metadata was known; quacks like a ProducerBatch."""

    __slots__ = ("args", "created", "future", "_metadata")

    def __init__(self, args: tuple, created: float) -> None:
        self.args = args
        self.created = created
        self.future = concurrent.futures.Future()
        self._metadata: RecordMetadata | None = None

    def metadata(self, index: int) -> RecordMetadata:
        self.future.result()
        metadata = self._metadata
        return metadata[index] if type(metadata) is list else metadata  # list: a send_batch

    def resolve(self, inner: RecordFuture | BatchFuture) -> None:
        exc = inner.exception()
        if exc is not None:
            self.future.set_exception(exc)
        else:
            self._metadata = inner.get()
            self.future.set_result(None)


class AsyncProducer:
    """Publish records; ``async with AsyncProducer("host:port") as producer: ...``.

    Args:
        bootstrap: "host:port[,host:port]".
        acks: 0 (no response), 1 (leader wrote it), "all"/-1 (every in-sync replica has
            it; a leader alone in its ISR, as on a single node, fsyncs it first).
        linger_ms: how long a batch waits for more records before it is sent.
        batch_size: bytes per partition batch before it is sent without waiting (capped so
            one batch fits in one request of ``max_request_size``).
        compression: None or "zstd".
        retries, retry_backoff_ms: attempts and first backoff for retriable errors. The
            default (None) retries a batch until ``delivery_timeout_ms``, as Kafka does, so a
            leader failover (session timeout plus election) is ridden out, not reported.
        max_in_flight: unanswered Produce requests per broker connection.
        connect_timeout_ms: how long setting up a connection (TCP, TLS, login) may take
            before the client gives up on that broker and asks another (docs/client.md).
        max_request_size: bytes per Produce request, envelope included; keep it at or below
            the broker's ``max_frame_bytes`` (16 MiB by default), which closes the connection
            on a larger frame. A record that cannot fit raises ``MessageTooLargeError``.
        max_block_ms: how long the sync producer blocks on a full buffer or missing metadata.
        delivery_timeout_ms: every future resolves within this long of its ``send``: a
            batch not acknowledged by then fails with ``DeliveryTimeoutError``, even if it
            is in flight (it may then still have been written).
        buffer_memory: bytes the sync producer may hold unsent before ``send`` blocks.
        enable_idempotence: stamp batches with a producer id and sequences so retries
            (across connection losses, broker restarts and leader failovers) never write a
            batch twice; keeps up to five batches in flight per partition. The default
            (None) turns it on with acks="all" and off with acks=1 or 0, as Kafka 3.0 does;
            True with acks other than "all" is refused.
        security: TLS and SASL/SCRAM options (``tslog.client.security.Security``) for every
            broker connection; None = plain TCP.
    """

    def __init__(self, bootstrap, *, acks=-1, linger_ms: float = 5,
                 batch_size: int = 256 * 1024, compression: str | None = None,
                 retries: int | None = None, retry_backoff_ms: int = 100,
                 request_timeout_ms: int = 30_000, max_in_flight: int = 5, max_request_size: int = 8 * 1024 * 1024,
                 max_block_ms: int = 60_000, delivery_timeout_ms: int = 120_000,
                 connect_timeout_ms: int = 3_000,
                 buffer_memory: int = 32 * 1024 * 1024,
                 client_id: str = "tslog-producer", key_serializer=None,
                 value_serializer=None, enable_idempotence: bool | None = None,
                 security: Security | None = None) -> None:
        if acks not in _ACKS:
            raise ValueError(f"acks must be 0, 1 or 'all', not {acks!r}")
        if enable_idempotence is None:
            enable_idempotence = _ACKS[acks] == -1
        if enable_idempotence:
            require_acks_all(_ACKS[acks])
        self._idempotence = Idempotence() if enable_idempotence else None
        if max_request_size <= REQUEST_OVERHEAD_BYTES + RECORD_OVERHEAD_BYTES:
            raise ValueError(f"max_request_size must exceed {REQUEST_OVERHEAD_BYTES + RECORD_OVERHEAD_BYTES}")
        if compression not in _COMPRESSION:
            raise ValueError(f"compression must be None or 'zstd', not {compression!r}")
        self.acks = _ACKS[acks]
        self.compression = _COMPRESSION[compression]
        # Batches: bounded by delivery_timeout_ms unless a count is given. Other requests
        # (metadata, producer id) keep a small count: they have no delivery deadline.
        self.retries = 2**31 - 1 if retries is None else retries
        self.request_timeout_ms = request_timeout_ms
        self.max_request_size = max_request_size
        self.max_block_ms = max_block_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.buffer_memory = buffer_memory
        self.key_serializer = key_serializer
        self.value_serializer = value_serializer
        self._cluster = Cluster(bootstrap, client_id=client_id,
                                retries=5 if retries is None else retries,
                                retry_backoff_ms=retry_backoff_ms,
                                request_timeout_ms=request_timeout_ms,
                                max_in_flight=max_in_flight, security=security,
                                connect_timeout_ms=connect_timeout_ms)
        # Record bytes one batch may hold: past this its request would not fit in a frame.
        self._max_record_bytes = max_request_size - REQUEST_OVERHEAD_BYTES - RECORD_OVERHEAD_BYTES
        self._accumulator = RecordAccumulator(
            min(batch_size, max_request_size - REQUEST_OVERHEAD_BYTES), linger_ms,
            delivery_timeout_ms)
        self._sticky = StickyPartitioner()
        self._deferred: list[_DeferredRecord] = []
        self._sender: Sender | None = None  # made on the loop, by the first send or start
        # topic -> (TopicPartition of partition 0, 1, ...): interned, rebuilt when the
        # metadata (Cluster.topics, replaced on each refresh) changes.
        self._tps: dict[str, tuple[TopicPartition, ...]] = {}
        self._tps_source: dict | None = None
        self._serializing = key_serializer is not None or value_serializer is not None
        self._closing = False
        self._closed = False

    # ------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Load cluster metadata and start the sender (``async with`` calls this)."""
        self._ensure_sender()
        await self._cluster.refresh_metadata()

    def _ensure_sender(self) -> None:
        if self._sender is None:
            if self._closing:
                raise ClientClosedError()
            self._sender = Sender(
                self._accumulator, self._cluster, self._idempotence, self._sticky,
                SendSettings(self.acks, self.compression, self.request_timeout_ms,
                             self.max_request_size, self.retries, self.delivery_timeout_ms),
                self._resolve_deferred, lambda: self._closed)

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def close(self, timeout_ms: int | None = None) -> None:
        """Send what is buffered (up to ``timeout_ms``), then close. Safe to call twice."""
        if self._closed:
            return
        self._closing = True
        if self._sender is not None:
            try:
                await self._wait_flushed(timeout_ms)  # what is left after it is aborted
            finally:
                with self._accumulator.lock:
                    self._accumulator.abort_all(ClientClosedError("producer closed"))
                for record in self._deferred:
                    record.future.set_exception(ClientClosedError("producer closed"))
                self._deferred.clear()
                await self._sender.stop()
        await self._cluster.close()
        self._closed = True

    # ------------------------------------------------------------------------------ send

    def send(self, topic: str, value=None, key=None, partition: int | None = None,
             timestamp_ms: int | None = None, headers=None) -> RecordFuture:
        """Queue a record; the returned future resolves to its ``RecordMetadata``.

        Raises (at once, nothing queued): ClientClosedError, TypeError for a key or value that
        is not bytes-like (without a serializer), MessageTooLargeError.
        """
        if self._closing:
            raise ClientClosedError()
        if self._sender is None:
            self._ensure_sender()
        if self._serializing:
            value, key = self._serialize(value, key)
        return self._send_serialized(topic, value, key, partition, timestamp_ms, headers)

    def _topic_partitions(self, topic: str) -> tuple[TopicPartition, ...] | None:
        """The interned TopicPartitions of ``topic`` (None while its metadata is unknown)."""
        topics = self._cluster.topics
        if topics is not self._tps_source:  # metadata refreshed: partitions may have changed
            self._tps = {}
            self._tps_source = topics
        tps = self._tps.get(topic)
        if tps is None:
            partitions = topics.get(topic)
            if not partitions:
                return None
            tps = self._tps[topic] = tuple(TopicPartition(topic, p)
                                           for p in range(len(partitions)))
        return tps

    def _send_serialized(self, topic, value, key, partition, timestamp_ms,
                         headers) -> RecordFuture:
        """The per-record fast path: checks, partition choice and append in one frame."""
        if type(value) is bytes:
            size = len(value)
        elif value is None:
            size = 0
        elif type(value) in _BYTES:
            size = len(value)
        else:
            raise TypeError("key and value must be bytes-like or None (or pass a serializer)")
        if key is not None:
            if type(key) not in _BYTES:
                raise TypeError("key and value must be bytes-like or None (or pass a serializer)")
            size += len(key)
        if size > self._max_record_bytes:
            raise MessageTooLargeError(f"a record of {size} bytes does not fit in a request "
                                       f"of max_request_size {self.max_request_size}"
                                       + REQUEST_SIZE_HINT)
        if timestamp_ms is None:
            create_time = _time_ns() // 1_000_000
        elif type(timestamp_ms) is int:
            create_time = timestamp_ms
        else:
            raise TypeError("timestamp_ms must be an int (epoch milliseconds)")
        tps = self._tps.get(topic) if self._cluster.topics is self._tps_source else None
        if tps is None:
            tps = self._topic_partitions(topic)
            if tps is None:
                return self._defer((topic, value, key, partition, create_time, headers))
        accumulator = self._accumulator
        lock = accumulator.lock
        lock.acquire()  # cheaper than "with" on the hot path
        try:
            if partition is None:
                if key is not None:
                    partition = key_partition(key, len(tps))
                else:
                    partition = self._sticky.partition(topic, len(tps))
            elif not 0 <= partition < len(tps):
                raise UnknownTopicOrPartitionError(
                    f"{topic} has {len(tps)} partitions, not {partition + 1}")
            tp = tps[partition]
            batch = accumulator._open.get(tp)
            size += RECORD_OVERHEAD_BYTES
            if (batch is not None and not headers and batch.headers is None
                    and batch.size_bytes + size < accumulator.batch_size
                    and (key is None or batch.keys is not None)):
                # The common case inlined: the open batch takes the record and stays open
                # (``RecordAccumulator.append`` does the same and everything else).
                values = batch.values
                future = RecordFuture(batch, len(values))
                values.append(value)
                batch.create_times.append(create_time)
                if batch.keys is not None:
                    batch.keys.append(key)
                batch.size_bytes += size
                accumulator.buffered_bytes += size
                wake = False
            else:
                future, wake, closed = accumulator.append(tp, value, key, create_time, headers)
                if closed is not None:
                    self._sticky.batch_closed(topic, closed.tp.partition, len(tps))
        finally:
            lock.release()
        if wake:
            self._wake()
        return future

    def send_batch(self, topic: str, values, keys=None, partition: int | None = None,
                   timestamp_ms=None, headers=None) -> BatchFuture:
        """Queue many records at once; the future resolves to their ``RecordMetadata`` list.

        The lists go to the batch encoder as they are (no per-record work in Python), as
        batches of their own sent without lingering (``_batching.py``). ``keys`` and
        ``headers`` are None or one entry per value; ``timestamp_ms`` is None (now), one int
        for all or a list of ints. Partitioning is ``send``'s: explicit ``partition``, else
        each key's partition, else one sticky partition for the whole call. Raises like
        ``send``, plus ValueError for lists of different lengths; nothing is queued when it
        raises.
        """
        if self._closing:
            raise ClientClosedError()
        if self._sender is None:
            self._ensure_sender()
        values, keys = serialize_batch(values, keys, self.value_serializer, self.key_serializer)
        return self._queue_batch(topic, partition, *check_batch(
            values, keys, timestamp_ms, headers, self._max_record_bytes, self.max_request_size))

    def send_section(self, topic: str, section: Section, partition: int) -> BatchFuture:
        """Queue a records section encoded already (``tslog.protocol.records.Section``) as
        one batch into ``partition``; the future resolves like ``send_batch``'s.

        Why: a caller holding the records as columns (the mirror copies fetched batches)
        builds the section with a few array operations; this path then does no work per
        record at all - no type or length checks, no lists - and the batch still gets the
        producer's id and sequence (idempotence), retries and deadlines like any other.
        The broker checks the section before it accepts it (CORRUPT_MESSAGE if malformed).

        Raises: ClientClosedError; MessageTooLargeError for a section over the producer's
        ``max_request_size``; UnknownTopicOrPartitionError for a partition the topic lacks.
        """
        if self._closing:
            raise ClientClosedError()
        if self._sender is None:
            self._ensure_sender()
        return self._queue_section(topic, section, partition)

    def _queue_section(self, topic: str, section: Section, partition: int) -> BatchFuture:
        size = section.size
        if size > self._max_record_bytes:
            raise MessageTooLargeError(f"a section of {size} bytes does not fit in a request "
                                       f"of max_request_size {self.max_request_size}"
                                       + REQUEST_SIZE_HINT)
        tps = self._topic_partitions(topic)
        if tps is None:
            record = self._defer_record((SECTION, topic, section, partition))
            return BatchFuture([(record, range(section.record_count))], section.record_count)
        return self._append_section(topic, tps, section, partition)

    def _append_section(self, topic: str, tps, section: Section, partition: int) -> BatchFuture:
        future = append_section(self._accumulator, self._sticky, topic, tps, section, partition)
        self._wake()
        return future

    def _queue_batch(self, topic, partition, values, keys, create_times, headers,
                     lengths) -> BatchFuture:
        count = len(values)
        if not count:
            return BatchFuture([], 0)
        tps = self._topic_partitions(topic)
        if tps is None:
            args = (BATCH, topic, values, keys, partition, create_times, headers, lengths)
            record = self._defer_record(args)
            return BatchFuture([(record, range(count))], count)
        future = append_batch(self._accumulator, self._sticky, topic, tps, values, keys,
                              partition, create_times, headers, lengths)
        self._wake()
        return future

    def _append_batch(self, topic, tps, values, keys, partition, create_times, headers,
                      lengths) -> BatchFuture:
        future = append_batch(self._accumulator, self._sticky, topic, tps, values, keys,
                              partition, create_times, headers, lengths)
        self._wake()
        return future

    async def send_and_wait(self, topic: str, value=None, key=None, partition=None,
                            timestamp_ms=None, headers=None) -> RecordMetadata:
        return await self.send(topic, value, key, partition, timestamp_ms, headers)

    def _check_record(self, value, key) -> None:
        """``send``'s TypeError for a key or value that is not bytes-like (off the hot path)."""
        if (value is not None and type(value) not in _BYTES) or (
                key is not None and type(key) not in _BYTES):
            raise TypeError("key and value must be bytes-like or None (or pass a serializer)")

    def _serialize(self, value, key):
        if self.value_serializer is not None:
            value = self.value_serializer(value)
        if self.key_serializer is not None and key is not None:
            key = self.key_serializer(key)
        return value, key

    def _defer(self, args: tuple) -> RecordFuture:
        return RecordFuture(self._defer_record(args), 0)

    def _defer_record(self, args: tuple) -> _DeferredRecord:
        record = _DeferredRecord(args, time.monotonic())
        with self._accumulator.lock:
            self._deferred.append(record)
        self._wake()
        return record

    def _wake(self) -> None:
        sender = self._sender
        if sender is not None:
            sender.wake()

    async def flush(self, timeout_ms: int | None = None) -> None:
        """Send everything buffered now and wait until each record succeeded or failed;
        FlushTimeoutError if ``timeout_ms`` passes first (``_outcomes.check_flushed``)."""
        check_flushed(await self._wait_flushed(timeout_ms), timeout_ms)

    async def _wait_flushed(self, timeout_ms: int | None) -> int:
        """Send everything buffered now and wait (up to ``timeout_ms``) for each record's
        outcome; returns how many batches are still without one."""
        if self._sender is None:
            return 0
        accumulator = self._accumulator
        with accumulator.lock:
            futures = [batch.future for batch in accumulator.incomplete]
            accumulator.flushing += 1
        futures += [record.future for record in self._deferred]
        self._wake()
        try:
            return await wait_for_outcomes(futures, timeout_ms)
        finally:
            with accumulator.lock:
                accumulator.flushing -= 1

    async def partitions_for(self, topic: str) -> list[int]:
        return await self._cluster.ensure_topic(topic)

    # ------------------------------------------- for the blocking facade (``sync.Producer``)
    # Called on the facade's caller thread, never on this producer's loop. The accumulator is
    # thread-safe, so a record is queued without a hop to the loop (the hop would cost more
    # than the rest of a send). ``run(coro, timeout_s)`` runs a coroutine on this producer's
    # loop and waits for it: the facade's loop thread, needed only for missing metadata.

    def blocking_send(self, run) -> Callable[..., RecordFuture]:
        """``send`` for a thread other than the loop's, which may block: on a full buffer
        (``BufferFullError`` after ``max_block_ms``) and, once per topic, while its metadata
        loads (``run`` runs a coroutine on the loop and waits for it).

        A closure, not a method, so that the blocking ``Producer.send`` is this function
        itself: a record then costs one Python call before ``_send_serialized`` instead of
        two, with the producer's fixed parts bound once. Measured in alternating pairs
        against the facade that reached into this class: the method version was measurably
        slower per record, this one is level."""
        send_serialized = self._send_serialized
        accumulator = self._accumulator
        buffer_memory = self.buffer_memory
        serializing = self._serializing

        def send(topic, value=None, key=None, partition=None, timestamp_ms=None,
                 headers=None) -> RecordFuture:
            if self._closing:
                raise ClientClosedError()
            if serializing:
                value, key = self._serialize(value, key)
            if accumulator.buffered_bytes >= buffer_memory:
                self._wait_for_space()
            if not self._cluster.topics.get(topic):
                self._check_record(value, key)  # bad input is a TypeError, even for a bad topic
                run(self.partitions_for(topic), self.max_block_ms / 1000)
            return send_serialized(topic, value, key, partition, timestamp_ms, headers)

        return send

    def send_batch_from_thread(self, run, topic, values, keys, partition, timestamp_ms,
                               headers) -> BatchFuture:
        """``send_batch`` that may block, as ``blocking_send``; input is checked first."""
        if self._closing:
            raise ClientClosedError()
        values, keys = serialize_batch(values, keys, self.value_serializer, self.key_serializer)
        checked = check_batch(values, keys, timestamp_ms, headers, self._max_record_bytes,
                              self.max_request_size)
        if self._accumulator.buffered_bytes >= self.buffer_memory:
            self._wait_for_space()
        if not self._cluster.topics.get(topic):
            run(self.partitions_for(topic), self.max_block_ms / 1000)
        return self._queue_batch(topic, partition, *checked)

    def send_section_from_thread(self, run, topic, section, partition) -> BatchFuture:
        """``send_section`` for the blocking facade's thread: it may block, as
        ``send_batch_from_thread`` does (full buffer, unknown topic)."""
        if self._closing:
            raise ClientClosedError()
        if self._accumulator.buffered_bytes >= self.buffer_memory:
            self._wait_for_space()
        if not self._cluster.topics.get(topic):
            run(self.partitions_for(topic), self.max_block_ms / 1000)
        return self._queue_section(topic, section, partition)

    def _wait_for_space(self) -> None:
        """Block the calling thread while the buffer is full; the sender frees space."""
        accumulator = self._accumulator
        deadline = time.monotonic() + self.max_block_ms / 1000
        with accumulator.space:
            while accumulator.buffered_bytes >= self.buffer_memory:
                left = deadline - time.monotonic()
                if left <= 0 or self._closing:
                    raise BufferFullError()
                accumulator.space.wait(min(left, 0.1))
        if self._closing:  # closing aborted the buffered batches: that freed the space
            raise ClientClosedError()

    def _resolve_deferred(self) -> float | None:
        """Append deferred records whose topic is now known; fail those waited too long."""
        if not self._deferred:
            return None
        now = time.monotonic()
        waiting = []
        delivery_timeout_s = self.delivery_timeout_ms / 1000
        with self._accumulator.lock:
            deferred, self._deferred = self._deferred, []
        for record in deferred:
            deadline = record.created + delivery_timeout_s
            kind = record.args[0]
            topic = record.args[1] if kind is BATCH or kind is SECTION else kind
            tps = self._topic_partitions(topic)
            if tps is not None:
                try:
                    if kind is BATCH:
                        inner = self._append_batch(topic, tps, *record.args[2:])
                    elif kind is SECTION:
                        inner = self._append_section(topic, tps, *record.args[2:])
                    else:  # its create time is an int by now
                        inner = self._send_serialized(*record.args)
                except TslogError as exc:
                    record.future.set_exception(exc)
                    continue
                with self._accumulator.lock:
                    for batch in inner.batches():  # the wait for metadata counts
                        self._accumulator.shorten_deadline(batch, deadline)
                inner.add_done_callback(record.resolve)
            elif now - record.created > self.max_block_ms / 1000:
                record.future.set_exception(UnknownTopicOrPartitionError(
                    f"topic {topic!r} not found within max_block_ms"))
            elif now >= deadline:
                record.future.set_exception(DeliveryTimeoutError(
                    f"topic {topic!r} unknown for delivery_timeout_ms "
                    f"{self.delivery_timeout_ms}"))
            else:
                waiting.append(record)
        with self._accumulator.lock:
            self._deferred[:0] = waiting
        if not waiting:
            return None
        self._sender.refresh_metadata()
        return min(now + self._cluster.retry_backoff_ms / 1000,
                   min(record.created for record in waiting) + delivery_timeout_s)
