"""The output schema and the column-wise build of Arrow record batches from stored batches.

Spark checks the first yielded ``RecordBatch`` against the Arrow form of the output schema
with ``Schema.equals`` (names, types and nullability), so the schema lives here in both forms.

``build_record_batch`` never runs Python per record: each stored batch's columns (numpy arrays
and memoryviews from ``decode_columns``) are sliced to the requested offsets, the slices of
all batches in one Fetch response are concatenated with numpy and one ``b"".join`` per blob,
and Arrow arrays are made from those buffers. Constant columns (topic, partition,
timestampType) are made with ``numpy.full`` or a repeated byte string.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

TIMESTAMP_TYPE_LOG_APPEND = 1  # Kafka's id for LogAppendTime (0 = CreateTime)

_BASE_DDL = ("key binary, value binary, topic string, partition int, offset bigint, "
             "timestamp timestamp, timestampType int, createTime timestamp")
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"

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


def _binary(offsets: np.ndarray, valid: np.ndarray | None, blob, n: int) -> pa.Array:
    if valid is None:
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(blob)]
        return pa.Array.from_buffers(pa.binary(), n, buffers, null_count=0)
    null_count = n - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(pa.binary(), n, [bitmap, pa.py_buffer(offsets),
                                                  pa.py_buffer(blob)], null_count=null_count)


def _timestamps_us(ms: np.ndarray) -> pa.Array:
    micros = np.multiply(ms, 1000, dtype=np.int64)
    return pa.Array.from_buffers(_TS, len(micros), [None, pa.py_buffer(micros)], null_count=0)


def _constant_string(text: str, n: int) -> pa.Array:
    data = text.encode()
    offsets = np.arange(0, (n + 1) * len(data), len(data) or 1, dtype=np.int32)[: n + 1] \
        if data else np.zeros(n + 1, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(data * n)], null_count=0)


def _concat_blob(pieces):
    """(offsets int32[n+1], valid bool[n] | None, blob) from (offsets, valid, blob, lo, hi)."""
    offset_parts = []
    valid_parts = []
    blobs = []
    base = 0
    any_null = False
    for index, (offsets, valid, blob, lo, hi) in enumerate(pieces):
        first = int(offsets[lo])
        last = int(offsets[hi])
        part = offsets[lo + (1 if index else 0):hi + 1]
        if first != base:
            part = part + np.int32(base - first)
        offset_parts.append(part)
        part_valid = valid[lo:hi]
        valid_parts.append(part_valid)
        if not any_null and not part_valid.all():
            any_null = True
        blobs.append(blob[first:last])
        base += last - first
    if len(offset_parts) == 1:  # one stored batch: views, no copies
        offsets = np.ascontiguousarray(offset_parts[0], dtype=np.int32)
        return offsets, (valid_parts[0] if any_null else None), blobs[0]
    offsets = np.concatenate(offset_parts).astype(np.int32, copy=False)
    blob = b"".join(blobs)
    valid = np.concatenate(valid_parts) if any_null else None
    return offsets, valid, blob


def _headers_array(pieces, n: int) -> pa.Array:
    """list<struct<key, value>>, null where a record has no headers."""
    if all(columns.headers is None for columns, _, _ in pieces):
        return pa.nulls(n, HEADERS_TYPE)
    entries = []
    for columns, lo, hi in pieces:
        if columns.headers is None:
            entries.extend([None] * (hi - lo))
        else:
            entries.extend(columns.headers[lo:hi])
    # One C-level conversion over the headers (msgpack already built these tuples).
    return pa.array([None if not e else [{"key": k, "value": v} for k, v in e]
                     for e in entries], type=HEADERS_TYPE)


def build_record_batch(pieces, topic: str, partition: int, include_headers: bool,
                       schema: pa.Schema) -> pa.RecordBatch:
    """One Arrow batch from ``pieces``: (RecordColumns, lo, hi) slices, in offset order."""
    n = sum(hi - lo for _, lo, hi in pieces)
    keys = _concat_blob([(c.key_offsets, c.key_valid, c.keys, lo, hi) for c, lo, hi in pieces])
    values = _concat_blob([(c.value_offsets, c.value_valid, c.values, lo, hi)
                           for c, lo, hi in pieces])
    if len(pieces) == 1:
        columns, lo, hi = pieces[0]
        offsets = np.arange(columns.base_offset + lo, columns.base_offset + hi, dtype=np.int64)
        create_ms = columns.create_time[lo:hi]
        lat_ms = np.full(n, columns.log_append_time, dtype=np.int64)
    else:
        offsets = np.concatenate([np.arange(c.base_offset + lo, c.base_offset + hi,
                                            dtype=np.int64) for c, lo, hi in pieces])
        create_ms = np.concatenate([c.create_time[lo:hi] for c, lo, hi in pieces])
        lat_ms = np.repeat(np.array([c.log_append_time for c, _, _ in pieces], dtype=np.int64),
                           [hi - lo for _, lo, hi in pieces])
    arrays = [
        _binary(keys[0], keys[1], keys[2], n),
        _binary(values[0], values[1], values[2], n),
        _constant_string(topic, n),
        pa.Array.from_buffers(pa.int32(), n,
                              [None, pa.py_buffer(np.full(n, partition, dtype=np.int32))],
                              null_count=0),
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)], null_count=0),
        _timestamps_us(lat_ms),
        pa.Array.from_buffers(pa.int32(), n,
                              [None, pa.py_buffer(np.full(n, TIMESTAMP_TYPE_LOG_APPEND,
                                                          dtype=np.int32))], null_count=0),
        _timestamps_us(create_ms),
    ]
    if include_headers:
        arrays.append(_headers_array(pieces, n))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
