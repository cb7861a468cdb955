"""The consumer's fetch pipeline: per-partition state, background fetch loops, record decoding.

Theory of operation. Each assigned partition has a *position* (the next offset ``poll`` will
return) and a *fetch offset* (the next offset to ask the broker for). They differ while
fetched data waits in the buffer: one fetch loop per leader broker sends the next Fetch as
soon as the previous answer arrives, so the broker works while the user processes records
and the consumer is not bound by round trips. At most ``MAX_BUFFERED_FETCHES`` answers per
broker wait unconsumed, which bounds memory.

``seek`` bumps the partition's *epoch*: buffered data and answers to fetches sent before
the seek carry the old epoch and are dropped, so nothing from the old position leaks out.
The broker returns whole batches; the first may start before the fetch offset (a batch is
never split), so decoding skips records below the position.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import struct
from itertools import repeat

from tslog.protocol.batch_header import (
    HEADER_SIZE,
    BatchFormatError,
    parse_header,
    peek_length,
    peek_record_count,
)
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import (
    ROWS_MAX_RECORDS,
    RecordColumns,
    RecordRows,
    decode_columns,
    decode_rows,
)

from ._cluster import failed_as_leader
from ._offsets import group_by_topic
from ._types import ColumnBatch, ConsumerRecord, TopicPartition
from .errors import CorruptMessageError, TslogError, refused

_FETCH = ApiKey.FETCH  # read per request (see ApiKey)

log = logging.getLogger(__name__)

MAX_BUFFERED_FETCHES = 2  # answers per broker fetched ahead of the user


class PartitionState:
    __slots__ = ("position", "fetch_offset", "epoch", "high_watermark", "log_start_offset",
                 "retry_at")

    def __init__(self) -> None:
        self.position: int | None = None  # None: resolve from committed offset or reset
        self.fetch_offset: int | None = None
        self.epoch = 0
        self.high_watermark = -1
        self.log_start_offset = -1
        self.retry_at = 0.0


class CompletedFetch:
    """Batches fetched for one partition, decoded lazily as ``poll`` reaches them."""

    __slots__ = ("tp", "epoch", "batches", "node_id", "_pending", "_next", "_columns")

    def __init__(self, tp: TopicPartition, epoch: int, batches: list, node_id: int) -> None:
        self.tp = tp
        self.epoch = epoch
        self.batches = collections.deque(batches)
        self.node_id = node_id
        self._pending: list = []  # decoded records of the current batch
        self._next = 0  # index of the first record of _pending not yet returned
        self._columns = None  # the RecordColumns _pending was made from, or its batch

    def take(self, state: PartitionState, limit: int | None, deserialize) -> list:
        """Up to ``limit`` records at or after the position; advances the position."""
        out: list = []
        while limit is None or len(out) < limit:
            if self._next >= len(self._pending):
                if not self.batches:
                    break
                try:
                    self._pending = self._decode(self.batches[0], state.position, deserialize)
                except BatchFormatError as exc:
                    # Keep the batch: every poll raises until the user seeks past it.
                    raise CorruptMessageError(
                        f"{self.tp.topic}-{self.tp.partition} at offset {state.position}: {exc}"
                    ) from None
                self.batches.popleft()
                self._next = 0
                continue
            stop = len(self._pending) if limit is None else self._next + limit - len(out)
            chunk = self._pending[self._next:stop]
            self._next += len(chunk)
            out += chunk
            state.position = chunk[-1].offset + 1
        return out

    def _decode(self, batch, position: int, deserialize) -> list:
        """A batch's records at offsets >= ``position``: a small batch row-wise (numpy's
        fixed cost per call would be most of its decoding, see ``_small_batches.py``),
        any other as columns."""
        if peek_record_count(batch) <= ROWS_MAX_RECORDS:
            self._columns = batch  # made columns only if take_columns asks for the rest
            return records_of_rows(self.tp, decode_rows(batch), position, deserialize)
        self._columns = decode_columns(batch)
        return decode_batch(self.tp, self._columns, position, deserialize)

    def take_columns(self, state: PartitionState) -> list[ColumnBatch]:
        """Every remaining batch as columns (records below the position cut off by ``start``)."""
        out: list[ColumnBatch] = []
        if self._next < len(self._pending):  # poll() decoded this batch but left records
            columns = self._columns
            if type(columns) is not RecordColumns:  # decoded row-wise: checked already
                columns = decode_columns(columns, verify_crc=False)
            start = self._pending[self._next].offset - columns.base_offset
            out.append(ColumnBatch(self.tp.topic, self.tp.partition, start, columns))
            state.position = columns.base_offset + columns.record_count
            self._pending, self._next, self._columns = [], 0, None
        while self.batches:
            try:
                columns = decode_columns(self.batches[0])
            except BatchFormatError as exc:
                if out:
                    break  # hand out what is good; the next call raises
                raise CorruptMessageError(
                    f"{self.tp.topic}-{self.tp.partition} at offset {state.position}: {exc}"
                ) from None
            self.batches.popleft()
            start = max(0, state.position - columns.base_offset)
            if start < columns.record_count:
                out.append(ColumnBatch(self.tp.topic, self.tp.partition, start, columns))
                state.position = columns.base_offset + columns.record_count
        return out

    @property
    def exhausted(self) -> bool:
        return self._next >= len(self._pending) and not self.batches


def split_batches(records) -> tuple[list, int | None]:
    """Cut a Fetch ``records`` blob into whole batches; returns (batches, next fetch offset)."""
    view = memoryview(records)
    batches, position, next_offset = [], 0, None
    end = len(view)
    while end - position >= HEADER_SIZE:
        length = peek_length(view, position)
        if length < HEADER_SIZE or position + length > end:
            break  # a torn tail: ignore it, fetch it again from the next offset
        header = parse_header(view, position)
        batches.append(view[position:position + length])
        next_offset = header.base_offset + header.record_count
        position += length
    return batches, next_offset


_FIXED_WIDTH: dict[tuple[int, int], struct.Struct] = {}  # (width, count) -> "<w>s" * count


def _fixed_width(width: int, count: int) -> struct.Struct:
    """A compiled format cutting ``count`` values of ``width`` bytes (cached: batches of one
    producer repeat the same few shapes)."""
    unpacker = _FIXED_WIDTH.get((width, count))
    if unpacker is None:
        if len(_FIXED_WIDTH) >= 64:
            _FIXED_WIDTH.clear()
        unpacker = _FIXED_WIDTH[width, count] = struct.Struct(f"{width}s" * count)
    return unpacker


def _column(blob, offsets, valid, start: int, n: int, convert):
    """The values of one binary column from ``start``: bytes or None, converted if asked.

    ``offsets`` and ``valid`` are the numpy arrays of ``RecordColumns``; they become lists
    only when the column has a non-null value (an all-null key column costs nothing). When
    every value has the same width (fixed-size payloads), one ``struct`` call cuts them all
    in C, much cheaper per value than slicing in a comprehension.
    """
    valid = valid[start:]
    if not valid.any():
        return repeat(None, n - start)
    if valid.all():
        widths = offsets[start + 1:] - offsets[start:-1]
        width = int(widths[0])
        if (widths == width).all():
            column = _fixed_width(width, n - start).unpack_from(blob, int(offsets[start]))
        else:
            data = bytes(blob)
            bounds = offsets[start:].tolist()
            column = [data[a:b] for a, b in zip(bounds, bounds[1:])]
        return column if convert is None else list(map(convert, column))
    data = bytes(blob)
    bounds = offsets[start:].tolist()
    column = [data[a:b] if ok else None
              for a, b, ok in zip(bounds, bounds[1:], valid.tolist())]
    if convert is not None:
        column = [None if item is None else convert(item) for item in column]
    return column


def decode_batch(tp: TopicPartition, batch, position: int, deserialize) -> list:
    """ConsumerRecords of one batch (bytes or its RecordColumns) at offsets >= ``position``.

    Records are assembled with ``map(tuple.__new__, ...)`` over zipped columns, so the only
    per-record Python work is slicing keys and values out of their blobs. Every field is an
    int, bytes, None or a tuple of those, so the GC can untrack the records.
    """
    columns = batch if type(batch) is RecordColumns else decode_columns(batch)
    n = columns.record_count
    base = columns.base_offset
    start = max(0, position - base)
    if start >= n:
        return []
    key_of, value_of = deserialize
    keys = _column(columns.keys, columns.key_offsets, columns.key_valid, start, n, key_of)
    values = _column(columns.values, columns.value_offsets, columns.value_valid, start, n,
                     value_of)
    # Headers are immutable tuples, and records without any share one empty tuple: a record
    # then holds nothing the garbage collector must track (a fresh [] per record doubled
    # the cost of a poll, mostly in GC passes).
    if columns.headers is None:
        headers = repeat((), n - start)
    else:
        headers = [entry or () for entry in columns.headers[start:]]
    count = n - start
    create_time = columns.create_time[start:]
    first_time = int(create_time[0])
    if (create_time == first_time).all():  # one CreateTime for the batch: share one int
        create_times = repeat(first_time, count)
    else:
        create_times = create_time.tolist()
    fields = zip(repeat(tp.topic, count), repeat(tp.partition, count),
                 range(base + start, base + n),
                 keys, values, create_times,
                 repeat(columns.log_append_time, count), headers)
    return list(map(tuple.__new__, repeat(ConsumerRecord, count), fields))


def records_of_rows(tp: TopicPartition, rows: RecordRows, position: int,
                    deserialize) -> list:
    """ConsumerRecords of a batch decoded row-wise, at offsets >= ``position``: the same
    records ``decode_batch`` makes of its columns."""
    base = rows.base_offset
    n = len(rows.create_times)
    start = max(0, position - base)
    if start >= n:
        return []
    if n == 1:  # a linger-0 producer's batch: one record, made directly
        return [_one_record(tp, rows, deserialize)]
    count = n - start
    key_of, value_of = deserialize
    keys, values = rows.keys[start:], rows.values[start:]
    if key_of is not None:
        keys = [None if key is None else key_of(key) for key in keys]
    if value_of is not None:
        values = [None if value is None else value_of(value) for value in values]
    headers = (repeat((), count) if rows.headers is None
               else [entry or () for entry in rows.headers[start:]])
    fields = zip(repeat(tp.topic, count), repeat(tp.partition, count),
                 range(base + start, base + n), keys, values, rows.create_times[start:],
                 repeat(rows.log_append_time, count), headers)
    return list(map(tuple.__new__, repeat(ConsumerRecord, count), fields))


def _one_record(tp: TopicPartition, rows: RecordRows, deserialize) -> ConsumerRecord:
    """``records_of_rows`` for a batch of one record: the same record without the
    iterators that pay off from a few records on."""
    key_of, value_of = deserialize
    key, value = rows.keys[0], rows.values[0]
    if key_of is not None and key is not None:
        key = key_of(key)
    if value_of is not None and value is not None:
        value = value_of(value)
    headers = () if rows.headers is None else (rows.headers[0] or ())
    return tuple.__new__(ConsumerRecord, (tp.topic, tp.partition, rows.base_offset, key, value,
                                          rows.create_times[0], rows.log_append_time, headers))


class Fetcher:
    """Background fetch loops feeding a buffer of CompletedFetch; owned by AsyncConsumer."""

    def __init__(self, cluster, states: dict, *, max_wait_ms: int, min_bytes: int,
                 max_bytes: int, max_partition_bytes: int) -> None:
        self.cluster = cluster
        self.states: dict[TopicPartition, PartitionState] = states
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_partition_bytes = max_partition_bytes
        self.buffer: collections.deque[CompletedFetch] = collections.deque()
        self.errors: collections.deque[BaseException] = collections.deque()
        self.reset_needed: set[TopicPartition] = set()
        self._loops: dict[int, asyncio.Task] = {}
        self._changed = asyncio.get_running_loop().create_future()

    def notify(self) -> None:
        """Wake every loop and every poller: assignment, positions or buffer changed."""
        changed, self._changed = self._changed, asyncio.get_running_loop().create_future()
        if not changed.done():
            changed.set_result(None)

    async def wait_changed(self, timeout: float | None) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self._changed), timeout)
        except asyncio.TimeoutError:
            pass

    def ensure_loops(self) -> None:
        """Start one fetch loop per leader of an assigned partition."""
        for tp in self.states:
            leader = self.cluster.leader_for(tp)
            if leader is not None and (leader not in self._loops or self._loops[leader].done()):
                self._loops[leader] = asyncio.ensure_future(self._loop(leader))

    def drop(self, tp: TopicPartition) -> None:
        """Forget buffered data of ``tp`` (after a seek or unassign)."""
        self.buffer = collections.deque(f for f in self.buffer if f.tp != tp)

    async def close(self) -> None:
        for task in self._loops.values():
            task.cancel()
        await asyncio.gather(*self._loops.values(), return_exceptions=True)
        self._loops.clear()

    def _fetchable(self, node_id: int) -> dict[TopicPartition, PartitionState]:
        now = asyncio.get_running_loop().time()
        buffered = collections.Counter(f.tp for f in self.buffer)
        return {tp: state for tp, state in self.states.items()
                if state.fetch_offset is not None and state.retry_at <= now
                and tp not in self.reset_needed
                and buffered[tp] < MAX_BUFFERED_FETCHES
                and self.cluster.leader_for(tp) == node_id}

    async def _loop(self, node_id: int) -> None:
        while True:
            fetchable = self._fetchable(node_id)
            if not fetchable:
                if not any(self.cluster.leader_for(tp) == node_id for tp in self.states):
                    return  # no partition led by this broker any more
                await self.wait_changed(self.cluster.retry_backoff_ms / 1000)
                continue
            epochs = {tp: state.epoch for tp, state in fetchable.items()}
            body = {"replica_id": -1, "max_wait_ms": self.max_wait_ms,
                    "min_bytes": self.min_bytes, "max_bytes": self.max_bytes,
                    "topics": group_by_topic({tp: {"fetch_offset": s.fetch_offset,
                                           "max_bytes": self.max_partition_bytes}
                                      for tp, s in fetchable.items()})}
            try:
                conn = await self.cluster.connection(node_id, lane="fetch")
                reply = await conn.send(
                    _FETCH, body,
                    timeout_ms=self.max_wait_ms + self.cluster.request_timeout_ms)
            except TslogError as exc:
                if not exc.retriable:
                    self.errors.append(exc)
                    self.notify()
                if failed_as_leader(exc):  # the refresh asks another broker (_cluster)
                    self.cluster.suspect(node_id)
                self._backoff(fetchable, refresh=True)
                await asyncio.sleep(self.cluster.retry_backoff_ms / 1000)
                continue
            try:
                self._absorb(node_id, reply, epochs)
            except Exception as exc:  # a bug or a broker answer we cannot use: tell poll
                log.exception("cannot use a fetch answer from broker %s", node_id)
                self.errors.append(exc)
                self._backoff(fetchable, refresh=False)
                self.notify()

    def _absorb(self, node_id: int, reply: dict, epochs: dict) -> None:
        refresh = False
        for topic in reply["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                state = self.states.get(tp)
                if state is None or epochs.get(tp) != state.epoch:
                    continue  # unassigned or sought since the fetch was sent
                code = part["error_code"]
                if code == 1:  # OFFSET_OUT_OF_RANGE: the consumer applies its reset policy
                    self.reset_needed.add(tp)
                    continue
                if code:
                    error = refused(code, f"fetch {tp.topic}-{tp.partition}")
                    if error.retriable:
                        refresh |= error.invalid_metadata
                        self._backoff({tp: state}, refresh=False)
                    else:
                        self.errors.append(error)
                    continue
                state.high_watermark = part["high_watermark"]
                state.log_start_offset = part["log_start_offset"]
                batches, next_offset = split_batches(part["records"])
                if batches and next_offset > state.fetch_offset:
                    state.fetch_offset = next_offset
                    self.buffer.append(CompletedFetch(tp, state.epoch, batches, node_id))
        if refresh:
            self.cluster.suspect(node_id)  # it refused as not the leader: ask another broker
            asyncio.ensure_future(self._refresh())
        self.notify()

    def _backoff(self, states: dict, refresh: bool) -> None:
        retry_at = asyncio.get_running_loop().time() + self.cluster.retry_backoff_ms / 1000
        for state in states.values():
            state.retry_at = retry_at
        if refresh:
            asyncio.ensure_future(self._refresh())

    async def _refresh(self) -> None:
        try:
            await self.cluster.refresh_metadata()
            self.ensure_loops()
        except TslogError as exc:
            log.debug("metadata refresh failed: %r", exc)

