"""The producer's batch path: ``send_batch`` hands whole lists to the batch encoder.

Why a batch API: ``send`` costs Python work per record (checks, partition choice, a lock, a
future), which caps a ``send`` loop far below what the broker takes. ``send_batch``
validates a whole list with C-level calls (``map(type, ...)``, ``map(len, ...)``), takes the
lock once per partition, and makes each piece of the list a ``ProducerBatch`` as it is, so
``build_batch`` encodes it without a Python loop. Metadata objects are made only when the
``BatchFuture`` result is asked for.

Functions, not a part of ``AsyncProducer``: each takes the accumulator, the sticky
partitioner and the limits it uses, and the producer's methods call them.
"""

from __future__ import annotations

import time
from itertools import chain, compress, repeat
from operator import is_not

import numpy as np
from crc32c import crc32c

from tslog.protocol.records import Section

from ._accumulator import RecordAccumulator
from ._outcome_futures import BatchFuture
from ._partitioner import StickyPartitioner, key_partition
from .errors import MessageTooLargeError, UnknownTopicOrPartitionError

_BYTES_OR_NONE = frozenset((bytes, bytearray, memoryview, type(None)))
BATCH = object()  # marks a deferred send_batch in the producer's deferred records' args
SECTION = object()  # marks a deferred send_section
_time_ns = time.time_ns
_flatten = chain.from_iterable


def serialize_batch(values, keys, value_serializer, key_serializer):
    """(values, keys) as lists, through the producer's serializers if it has them."""
    if value_serializer is not None:
        values = list(map(value_serializer, values))
    elif type(values) is not list:
        values = list(values)
    if keys is not None:
        if key_serializer is not None:
            keys = [None if key is None else key_serializer(key) for key in keys]
        elif type(keys) is not list:
            keys = list(keys)
    return values, keys


def check_batch(values: list, keys, timestamp_ms, headers, max_record_bytes: int,
                max_request_size: int) -> tuple:
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
    if count and max(lengths) > max_record_bytes:
        raise MessageTooLargeError(f"a record of {max(lengths)} bytes does not fit in a "
                                   f"request of max_request_size {max_request_size}")
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


def append_section(accumulator: RecordAccumulator, sticky: StickyPartitioner, topic: str,
                   tps, section: Section, partition: int) -> BatchFuture:
    """Queue ``section`` as one batch of ``partition``; the caller wakes the sender."""
    if not 0 <= partition < len(tps):
        raise UnknownTopicOrPartitionError(
            f"{topic} has {len(tps)} partitions, not {partition + 1}")
    with accumulator.lock:
        batch, closed = accumulator.append_section(tps[partition], section)
        if closed is not None:
            sticky.batch_closed(topic, partition, len(tps))
    return BatchFuture([(batch, range(section.record_count))], section.record_count)


def append_batch(accumulator: RecordAccumulator, sticky: StickyPartitioner, topic, tps,
                 values, keys, partition, create_times, headers, lengths) -> BatchFuture:
    """Cut the records into batches per partition and of about ``batch_size`` bytes; the
    caller wakes the sender."""
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
        groups = _key_groups(accumulator, sticky, topic, partitions, keys)
    if headers is not None:
        # Names and values flattened and measured in C: a generator per record was
        # the dearest part of a batch with three headers a record (the mirror's case).
        lengths = [length + sum(map(len, _flatten(entry))) + 4 * len(entry)
                   if entry else length for length, entry in zip(lengths, headers)]
    parts = []
    closed_batches = []
    with accumulator.lock:
        sticky_partition = None
        for target, positions in groups.items():
            if target < 0:
                if sticky_partition is None:
                    sticky_partition = sticky.partition(topic, partitions)
                target = sticky_partition
            if positions is None:
                chunk_values, chunk_keys, chunk_times, chunk_headers, chunk_lengths = (
                    values, keys, create_times, headers, lengths)
                positions = range(count)
            else:
                chunk_values, chunk_keys, chunk_times, chunk_headers, chunk_lengths = _pick(
                    positions, values, keys, create_times, headers, lengths)
            total = sum(chunk_lengths) + 16 * len(chunk_values)
            pieces = max(1, -(-total // accumulator.batch_size))
            step = -(-len(chunk_values) // pieces)
            tp = tps[target]
            for start in range(0, len(chunk_values), step):  # pieces of about batch_size
                stop = start + step
                whole = start == 0 and stop >= len(chunk_values)
                piece_values = chunk_values if whole else chunk_values[start:stop]
                batch, closed = accumulator.append_batch(
                    tp, piece_values,
                    chunk_keys if whole or chunk_keys is None else chunk_keys[start:stop],
                    chunk_times if whole or type(chunk_times) is int else chunk_times[start:stop],
                    chunk_headers if whole or chunk_headers is None
                    else chunk_headers[start:stop],
                    total if whole else sum(chunk_lengths[start:stop]) + 16 * len(piece_values))
                parts.append((batch, positions if whole else positions[start:stop]))
                if closed is not None:
                    closed_batches.append(closed)
        for closed in closed_batches:
            sticky.batch_closed(topic, closed.tp.partition, partitions)
    return BatchFuture(parts, count)


# Up to this many keys are grouped by a loop; more by numpy, whose fixed cost per call is
# worth paying only over a list long enough (as ``protocol/_column_check.py`` measured).
KEY_LOOP_MAX = 32


def _key_groups(accumulator: RecordAccumulator, sticky: StickyPartitioner, topic: str,
                partitions: int, keys: list) -> dict:
    """Target partition -> the positions of its records, by key (null keys: the sticky
    partition). Records keep their order within each partition."""
    sticky_partition = -1  # null keys: the sticky partition, chosen now (order per partition)
    if None in keys:
        with accumulator.lock:
            sticky_partition = sticky.partition(topic, partitions)
    if len(keys) > KEY_LOOP_MAX:
        return _key_groups_by_column(keys, partitions, sticky_partition)
    groups: dict = {}
    for position, key in enumerate(keys):
        target = sticky_partition if key is None else key_partition(key, partitions)
        group = groups.get(target)
        if group is None:
            groups[target] = [position]
        else:
            group.append(position)
    return groups


def _key_groups_by_column(keys: list, partitions: int, sticky_partition: int) -> dict:
    """``_key_groups`` for a long list, with C-level calls only: each key's partition is
    ``key_partition``'s (crc32c modulo the count), hashed by ``map``; a stable sort by
    partition then gives each partition's positions in order, so the Python work is per
    partition, not per record."""
    count = len(keys)
    present = np.fromiter(map(is_not, keys, repeat(None)), dtype=bool, count=count)
    targets = np.full(count, sticky_partition, dtype=np.int64)
    targets[present] = np.fromiter(map(crc32c, compress(keys, present)), dtype=np.int64,
                                   count=int(present.sum())) % partitions
    order = np.argsort(targets, kind="stable")
    found, starts = np.unique(targets[order], return_index=True)
    bounds = starts.tolist() + [count]
    positions = order.tolist()
    return {target: positions[start:end]
            for target, start, end in zip(found.tolist(), bounds, bounds[1:])}


def _pick(positions: list, values, keys, create_times, headers, lengths) -> tuple:
    """The records at ``positions``, column by column (C-level ``map``, no Python loop)."""
    return (list(map(values.__getitem__, positions)),
            list(map(keys.__getitem__, positions)),
            create_times if type(create_times) is int
            else list(map(create_times.__getitem__, positions)),
            None if headers is None else list(map(headers.__getitem__, positions)),
            list(map(lengths.__getitem__, positions)))

