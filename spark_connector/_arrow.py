"""The output schema and the column-wise build of Arrow record batches from stored batches.

Spark checks the first yielded ``RecordBatch`` against the Arrow form of the output schema
with ``Schema.equals`` (names, types and nullability), so the schema lives here in both forms.

``build_record_batch`` never runs Python per record, and its numpy calls are per response,
not per stored batch: the columns of a response's batches (``decode_batches``: cumulative
offsets and create times over all of them, blobs as views of the received Fetch response)
are sliced to the requested rows and written once into buffers from Arrow's memory pool: the
offsets rebased with one call, each batch's key and value bytes copied in, constant columns
(topic, partition, timestampType) filled. One Fetch response becomes one Arrow batch: the
JVM turns large batches into rows faster than many small ones (measured with a no-I/O
source, as bench/spark.py's ceiling row does: 8192-row batches were slower than 160k-row ones).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tslog.protocol.records import ColumnsOfBatches

TIMESTAMP_TYPE_LOG_APPEND = 1  # Kafka's id for LogAppendTime (0 = CreateTime)

_BASE_DDL = ("key binary, value binary, topic string, partition int, offset bigint, "
             "timestamp timestamp, timestampType int, createTime timestamp")
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"

_MAX_BINARY_BYTES = 2**31 - 1  # an Arrow binary array's int32 offsets
_TS = pa.timestamp("us", tz="UTC")
HEADER_STRUCT = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_STRUCT))

_BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", _TS),
    pa.field("timestampType", pa.int32()),
    pa.field("createTime", _TS),
]


def schema_ddl(include_headers: bool) -> str:
    return _BASE_DDL + (", " + HEADERS_DDL if include_headers else "")


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = list(_BASE_FIELDS)
    if include_headers:
        fields.append(pa.field("headers", HEADERS_TYPE))
    return pa.schema(fields)


def _allocate(count: int, dtype) -> tuple[pa.Buffer, np.ndarray]:
    """A buffer from Arrow's memory pool and a writable numpy view of it.

    Why not numpy: a batch's columns are several MiB each, and glibc hands allocations that
    large back to the kernel when they are freed, so every batch paid page faults for fresh
    pages (measured: most of a 160k-row batch's build time went to the kernel, several times
    the build on reused memory). Arrow's pool (mimalloc or jemalloc) keeps freed pages for the
    next batch.
    """
    dtype = np.dtype(dtype)
    buffer = pa.allocate_buffer(count * dtype.itemsize)
    return buffer, np.frombuffer(buffer, dtype=dtype, count=count)


_ramp = np.arange(0, dtype=np.int64)


def _ramp_to(n: int) -> np.ndarray:
    """0, 1, ... n - 1 (int64), kept between batches: offsets are a ramp plus a base."""
    global _ramp
    if len(_ramp) < n:
        _ramp = np.arange(max(n, 2 * len(_ramp)), dtype=np.int64)
    return _ramp[:n]


def _binary(offsets: np.ndarray, valid, blobs: list, starts: list, first: int, end: int
            ) -> pa.Array:
    """A binary array of rows [first, end) of a ``ColumnsOfBatches`` column.

    The cumulative offsets are rebased into one int32 offsets buffer with one numpy call and
    each batch's bytes copied once into one data buffer; a single batch's blob is used in
    place, without a copy.
    """
    n = end - first
    bitmap = None
    null_count = 0
    if valid is not None:
        rows_valid = valid[first:end]
        null_count = n - int(np.count_nonzero(rows_valid))
        if null_count:
            bitmap = pa.py_buffer(np.packbits(rows_valid, bitorder="little"))
    first_byte = int(offsets[first])
    total = int(offsets[end]) - first_byte
    if total > _MAX_BINARY_BYTES:
        raise ValueError(f"{total} bytes of one column do not fit an Arrow binary array")
    offsets_buffer, rebased = _allocate(n + 1, np.int32)
    np.subtract(offsets[first:end + 1], first_byte, out=rebased, casting="unsafe")
    if len(blobs) == 1:
        data = pa.py_buffer(blobs[0][first_byte:first_byte + total])
        return pa.Array.from_buffers(pa.binary(), n, [bitmap, offsets_buffer, data],
                                     null_count=null_count)
    data_buffer, data = _allocate(total, np.uint8)
    bounds = offsets[starts].tolist()
    written = 0
    for i, blob in enumerate(blobs):
        low, high = max(starts[i], first), min(starts[i + 1], end)
        if low >= high:
            continue
        begin = int(offsets[low]) - bounds[i]
        size = int(offsets[high]) - int(offsets[low])
        if size:
            data[written:written + size] = np.frombuffer(blob, np.uint8, size, begin)
            written += size
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, offsets_buffer, data_buffer],
                                 null_count=null_count)


class TaskConstants:
    """The constant columns (topic, partition, timestampType) of one task's batches, built
    once at the largest size asked for and sliced for each batch (Arrow slices share the
    buffers; arrays are immutable, so batches may share them): a 160k-row batch would
    otherwise write 26 bytes a row of the same values again."""

    __slots__ = ("_arrays", "_key", "_rows")

    def __init__(self) -> None:
        self._key = None
        self._rows = 0
        self._arrays: tuple = ()

    def columns(self, topic: str, partition: int, n: int) -> tuple:
        if (topic, partition) != self._key or n > self._rows:
            self._key, self._rows = (topic, partition), max(n, self._rows)
            rows = self._rows
            self._arrays = (_constant_string(topic, rows), _constant_int32(partition, rows),
                            _constant_int32(TIMESTAMP_TYPE_LOG_APPEND, rows))
        if n == self._rows:
            return self._arrays
        return tuple(array.slice(0, n) for array in self._arrays)


def _constant_int32(value: int, n: int) -> pa.Array:
    buffer, array = _allocate(n, np.int32)
    array.fill(value)
    return pa.Array.from_buffers(pa.int32(), n, [None, buffer], null_count=0)


def _constant_string(text: str, n: int) -> pa.Array:
    data = text.encode()
    offsets_buffer, offsets = _allocate(n + 1, np.int32)
    np.multiply(_ramp_to(n + 1), len(data), out=offsets, casting="unsafe")
    data_buffer, blob = _allocate(n * len(data), np.uint8)
    if data and n:  # one copy, then doubling copies: log2(n) memcpys, no strided loop
        blob[:len(data)] = np.frombuffer(data, np.uint8)
        filled = len(data)
        while filled < len(blob):
            step = min(filled, len(blob) - filled)
            blob[filled:filled + step] = blob[:step]
            filled += step
    return pa.Array.from_buffers(pa.string(), n, [None, offsets_buffer, data_buffer],
                                 null_count=0)


def _headers_array(headers: list | None, first: int, end: int) -> pa.Array:
    """list<struct<key, value>>, null where a record has no headers."""
    if headers is None:
        return pa.nulls(end - first, HEADERS_TYPE)
    # One C-level conversion over the headers (msgpack already built these tuples).
    return pa.array([None if not e else [{"key": k, "value": v} for k, v in e]
                     for e in headers[first:end]], type=HEADERS_TYPE)


def build_record_batch(columns: ColumnsOfBatches, first: int, end: int, topic: str,
                       partition: int, include_headers: bool, schema: pa.Schema,
                       constants: TaskConstants | None = None) -> pa.RecordBatch:
    """One Arrow batch from rows [first, end) of ``columns`` (one Fetch response's batches).

    ``constants``: the task's ``TaskConstants``, shared by its batches (one per task: it is
    not for several threads)."""
    n = end - first
    starts = columns.starts
    offsets_buffer, offsets = _allocate(n, np.int64)
    lat_buffer, lat_us = _allocate(n, np.int64)
    create_buffer, create_us = _allocate(n, np.int64)
    np.multiply(columns.create_time[first:end], 1000, out=create_us)
    bases = columns.base_offsets
    runs_on = all(bases[i] == bases[0] + starts[i] for i in range(1, len(bases)))
    if runs_on:  # offsets without gaps between batches: one call
        np.add(_ramp_to(end)[first:], bases[0], out=offsets)
    for i, lat in enumerate(columns.log_append_times):
        low, high = max(starts[i], first), min(starts[i + 1], end)
        if low >= high:
            continue
        lat_us[low - first:high - first] = lat * 1000
        if not runs_on:
            np.add(_ramp_to(high - low), bases[i] + low - starts[i],
                   out=offsets[low - first:high - first])
    topics, partitions, timestamp_types = (constants or TaskConstants()).columns(
        topic, partition, n)
    arrays = [
        _binary(columns.key_offsets, columns.key_valid, columns.keys, starts, first, end),
        _binary(columns.value_offsets, columns.value_valid, columns.values, starts, first,
                end),
        topics,
        partitions,
        pa.Array.from_buffers(pa.int64(), n, [None, offsets_buffer], null_count=0),
        pa.Array.from_buffers(_TS, n, [None, lat_buffer], null_count=0),
        timestamp_types,
        pa.Array.from_buffers(_TS, n, [None, create_buffer], null_count=0),
    ]
    if include_headers:
        arrays.append(_headers_array(columns.headers, first, end))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
