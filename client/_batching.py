"""The producer's batch path: ``send_batch`` hands whole lists to the batch encoder.

Split out of ``_producer.py`` to keep each module readable; ``AsyncProducer`` inherits these
methods and owns the state they use. Why a batch API: ``send`` costs a few microseconds of
Python per record (checks, partition choice, a lock, a future), which caps a ``send`` loop
far below what the broker takes. ``send_batch`` validates a whole list with C-level calls
(``map(type, ...)``, ``map(len, ...)``), takes the lock once per partition, and makes each
piece of the list a ``ProducerBatch`` as it is, so ``build_batch`` encodes it without a
Python loop. Metadata objects are made only when the ``BatchFuture`` result is asked for.
"""

from __future__ import annotations

import time
from itertools import chain

from tslog.protocol.records import Section

from ._accumulator import BatchFuture
from ._partitioner import key_partition
from .errors import (REQUEST_SIZE_HINT, ClientClosedError, MessageTooLargeError,
                     UnknownTopicOrPartitionError)

_BYTES_OR_NONE = frozenset((bytes, bytearray, memoryview, type(None)))
BATCH = object()  # marks a deferred send_batch in _DeferredRecord.args
SECTION = object()  # marks a deferred send_section
_time_ns = time.time_ns
_flatten = chain.from_iterable


class BatchingMixin:
    """``send_batch`` and its helpers for AsyncProducer (not usable on their own)."""

    def send_batch(self, topic: str, values, keys=None, partition: int | None = None,
                   timestamp_ms=None, headers=None) -> BatchFuture:
        """Queue many records at once; the future resolves to their ``RecordMetadata`` list.

        The lists go to the batch encoder as they are (no per-record work in Python), as
        batches of their own sent without lingering. ``keys`` and ``headers`` are None or one
        entry per value; ``timestamp_ms`` is None (now), one int for all or a list of ints.
        Partitioning is ``send``'s: explicit ``partition``, else each key's partition, else
        one sticky partition for the whole call. Raises like ``send``, plus ValueError for
        lists of different lengths; nothing is queued when it raises.
        """
        if self._closing:
            raise ClientClosedError()
        if self._sender is None:
            self._ensure_sender()
        values, keys = self._serialize_batch(values, keys)
        return self._send_batch_serialized(topic, values, keys, partition, timestamp_ms,
                                           headers)

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
        if not 0 <= partition < len(tps):
            raise UnknownTopicOrPartitionError(
                f"{topic} has {len(tps)} partitions, not {partition + 1}")
        accumulator = self._accumulator
        with accumulator.lock:
            batch, closed = accumulator.append_section(tps[partition], section)
            if closed is not None:
                self._sticky.batch_closed(topic, partition, len(tps))
        self._wake()
        return BatchFuture([(batch, range(section.record_count))], section.record_count)

    def _serialize_batch(self, values, keys):
        if self.value_serializer is not None:
            values = list(map(self.value_serializer, values))
        elif type(values) is not list:
            values = list(values)
        if keys is not None:
            if self.key_serializer is not None:
                serialize = self.key_serializer
                keys = [None if key is None else serialize(key) for key in keys]
            elif type(keys) is not list:
                keys = list(keys)
        return values, keys

    def _send_batch_serialized(self, topic, values: list, keys, partition, timestamp_ms,
                               headers) -> BatchFuture:
        return self._queue_batch(topic, partition,
                                 *self._check_batch(values, keys, timestamp_ms, headers))

    def _check_batch(self, values: list, keys, timestamp_ms, headers) -> tuple:
        """Validate and normalize: (values, keys, create_times, headers, record sizes)."""
        count = len(values)
        value_types = set(map(type, values))
        if not value_types <= _BYTES_OR_NONE:
            raise TypeError("key and value must be bytes-like or None (or pass a serializer)")
        if type(None) in value_types:
            lengths = [0 if value is None else len(value) for value in values]
        else:
            lengths = list(map(len, values))
        if keys is not None:
            if len(keys) != count:
                raise ValueError(f"{len(keys)} keys for {count} values")
            if not set(map(type, keys)) <= _BYTES_OR_NONE:
                raise TypeError("key and value must be bytes-like or None (or pass a serializer)")
            if keys.count(None) != count:  # not any(keys): an empty key is a key
                lengths = [length + (0 if key is None else len(key))
                           for length, key in zip(lengths, keys)]
            else:
                keys = None  # all null: the encoder's fast path
        if count and max(lengths) > self._max_record_bytes:
            raise MessageTooLargeError(f"a record of {max(lengths)} bytes does not fit in a "
                                       f"request of max_request_size {self.max_request_size}")
        if timestamp_ms is None:
            create_times = _time_ns() // 1_000_000
        elif type(timestamp_ms) is int:
            create_times = timestamp_ms
        else:
            create_times = list(timestamp_ms)
            if len(create_times) != count:
                raise ValueError(f"{len(create_times)} timestamps for {count} values")
            if not set(map(type, create_times)) <= {int}:
                raise TypeError("timestamp_ms must be ints (epoch milliseconds)")
        if headers is not None:
            headers = [list(entry) if entry else None for entry in headers]
            if len(headers) != count:
                raise ValueError(f"{len(headers)} headers entries for {count} values")
            if not any(headers):
                headers = None
        return values, keys, create_times, headers, lengths

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
        return self._append_batch(topic, tps, values, keys, partition, create_times, headers,
                                  lengths)

    def _append_batch(self, topic, tps, values, keys, partition, create_times, headers,
                      lengths) -> BatchFuture:
        """Cut the records into batches per partition and of about ``batch_size`` bytes."""
        count = len(values)
        partitions = len(tps)
        if partition is not None:
            if not 0 <= partition < partitions:
                raise UnknownTopicOrPartitionError(
                    f"{topic} has {partitions} partitions, not {partition + 1}")
            groups = {partition: None}  # None: every record, in order
        elif keys is None or partitions == 1:
            groups = {-1: None}  # the sticky partition, chosen under the lock
        else:
            groups = {}
            sticky = -1  # null keys: the sticky partition, chosen now (order per partition)
            if None in keys:
                with self._accumulator.lock:
                    sticky = self._sticky.partition(topic, partitions)
            for position, key in enumerate(keys):
                target = sticky if key is None else key_partition(key, partitions)
                group = groups.get(target)
                if group is None:
                    groups[target] = [position]
                else:
                    group.append(position)
        if headers is not None:
            # Names and values flattened and measured in C: a generator per record was
            # the dearest part of a batch with three headers a record (the mirror's case).
            lengths = [length + sum(map(len, _flatten(entry))) + 4 * len(entry)
                       if entry else length for length, entry in zip(lengths, headers)]
        batch_size = self._accumulator.batch_size
        parts = []
        closed_batches = []
        accumulator = self._accumulator
        with accumulator.lock:
            sticky_partition = None
            for target, positions in groups.items():
                if target < 0:
                    if sticky_partition is None:
                        sticky_partition = self._sticky.partition(topic, partitions)
                    target = sticky_partition
                if positions is None:
                    chunk_values, chunk_keys, chunk_times, chunk_headers, chunk_lengths = (
                        values, keys, create_times, headers, lengths)
                    positions = range(count)
                else:
                    chunk_values = list(map(values.__getitem__, positions))
                    chunk_keys = list(map(keys.__getitem__, positions))
                    chunk_times = (create_times if type(create_times) is int
                                   else list(map(create_times.__getitem__, positions)))
                    chunk_headers = (None if headers is None
                                     else list(map(headers.__getitem__, positions)))
                    chunk_lengths = list(map(lengths.__getitem__, positions))
                total = sum(chunk_lengths) + 16 * len(chunk_values)
                pieces = max(1, -(-total // batch_size))
                step = -(-len(chunk_values) // pieces)
                tp = tps[target]
                for start in range(0, len(chunk_values), step):
                    stop = start + step
                    whole = start == 0 and stop >= len(chunk_values)
                    piece_values = chunk_values if whole else chunk_values[start:stop]
                    batch, closed = accumulator.append_batch(
                        tp, piece_values,
                        chunk_keys if whole or chunk_keys is None else chunk_keys[start:stop],
                        chunk_times if whole or type(chunk_times) is int
                        else chunk_times[start:stop],
                        chunk_headers if whole or chunk_headers is None
                        else chunk_headers[start:stop],
                        total if whole else sum(chunk_lengths[start:stop]) + 16 * len(
                            piece_values))
                    parts.append((batch, positions if whole else positions[start:stop]))
                    if closed is not None:
                        closed_batches.append(closed)
            for closed in closed_batches:
                self._sticky.batch_closed(topic, closed.tp.partition, partitions)
        self._wake()
        return BatchFuture(parts, count)
