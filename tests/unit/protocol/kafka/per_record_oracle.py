"""The per-record RecordBatch v2 codec the listener used before ``record_columns.py``: kept
only as the oracle the column-wise codec is held to (tests/unit/protocol/kafka/
test_record_columns.py). Not imported by tslog itself.
"""

from __future__ import annotations

import struct
from typing import Iterator

from crc32c import crc32c

from tslog.protocol.kafka import compression
from tslog.protocol.kafka.errors import KafkaBatchError
from tslog.protocol.kafka.primitives import write_varlong
# The header layout, its constants, the batch tuple and the batch cutting are the product's
# own (unchanged by the column-wise rewrite); only the per-record walk is kept here.
from tslog.protocol.kafka.record_batch import (
    _CRC_START, _LENGTH_PREFIX, CODEC_MASK, CREATE_TIME, HEADER, HEADER_SIZE, LOG_APPEND_TIME,
    MAGIC, TIMESTAMP_LOG_APPEND, TRANSACTIONAL, KafkaBatch, split_batches)
# A record's headers and the varint reader were per-record before and stay so in the product:
# the oracle shares them (kafka-python's reader is the independent check of both).
from tslog.protocol.kafka.record_columns import _headers
from tslog.protocol.kafka.record_varints import record_uvarint as _uvarint


def decode_batch(data, *, verify_crc: bool = True,
                 max_uncompressed: int = compression.MAX_UNCOMPRESSED) -> KafkaBatch:
    """Decode exactly one batch. Raises ``KafkaBatchError`` (``UnsupportedCompression`` for a
    codec this install lacks) for anything that is not a well-formed v2 batch."""
    buf = bytes(data)
    if len(buf) < HEADER_SIZE:
        raise KafkaBatchError(f"{len(buf)} bytes are shorter than a batch header")
    (base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta,
     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
     count) = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise KafkaBatchError(f"record batch magic {magic}: only v2 (magic 2) is supported")
    if length + _LENGTH_PREFIX != len(buf):
        raise KafkaBatchError(f"batch length {length} does not match its {len(buf)} bytes")
    if verify_crc and crc32c(memoryview(buf)[_CRC_START:]) != crc:
        raise KafkaBatchError("record batch CRC32C mismatch")
    if count < 0 or last_offset_delta < 0:
        raise KafkaBatchError(f"record count {count} or last offset delta is negative")
    body = compression.decompress(attributes & CODEC_MASK, memoryview(buf)[HEADER_SIZE:],
                                  max_uncompressed)
    if count > len(body):
        raise KafkaBatchError(f"{count} records in {len(body)} bytes")
    columns = _decode_records(body, count)
    return KafkaBatch(base_offset, leader_epoch, attributes, last_offset_delta, base_timestamp,
                      max_timestamp, producer_id, producer_epoch, base_sequence, *columns)


def iter_batches(records, allow_partial_tail: bool = False, verify_crc: bool = True
                 ) -> Iterator[KafkaBatch]:
    for piece in split_batches(records, allow_partial_tail):
        yield decode_batch(piece, verify_crc=verify_crc)


def _decode_records(buf: bytes, count: int):
    """The records section as columns; one pass, checking each record's own length.

    Each varint is read inline when it is one byte (zigzag values -64..63: attributes,
    offset deltas under 64, short keys, header counts) and through ``_uvarint`` otherwise;
    that halves the time per record against a call per field. An index past the end can only
    mean a truncated record and becomes ``KafkaBatchError``.
    """
    offset_deltas, timestamp_deltas, keys, values, headers = [], [], [], [], []
    end = len(buf)
    pos = 0
    try:
        for _ in range(count):
            raw = buf[pos]
            if raw < 0x80:
                pos += 1
            else:
                raw, pos = _uvarint(buf, pos, end)
            size = (raw >> 1) ^ -(raw & 1)
            stop = pos + size
            if size < 6 or stop > end:
                raise KafkaBatchError(f"record length {size} does not fit the batch")
            pos += 1  # record attributes: unused by every Kafka version so far
            raw = buf[pos]
            if raw < 0x80:
                pos += 1
            else:
                raw, pos = _uvarint(buf, pos, stop)
            timestamp_deltas.append((raw >> 1) ^ -(raw & 1))
            raw = buf[pos]
            if raw < 0x80:
                pos += 1
            else:
                raw, pos = _uvarint(buf, pos, stop)
            offset_deltas.append((raw >> 1) ^ -(raw & 1))
            for column in (keys, values):
                raw = buf[pos]
                if raw < 0x80:
                    pos += 1
                else:
                    raw, pos = _uvarint(buf, pos, stop)
                if raw == 1:  # zigzag -1: null
                    column.append(None)
                    continue
                length = (raw >> 1) ^ -(raw & 1)
                if length < 0 or pos + length > stop:
                    raise KafkaBatchError("a record's key or value runs past the record")
                column.append(buf[pos:pos + length])
                pos += length
            raw = buf[pos]
            if raw == 0:
                pos += 1
                headers.append([])
            else:
                raw, pos = _uvarint(buf, pos, stop)
                headers.append(_headers(buf, pos, stop, (raw >> 1) ^ -(raw & 1)))
                pos = stop
            if pos != stop:
                raise KafkaBatchError(f"record ends {stop - pos} bytes after its fields")
    except IndexError:
        raise KafkaBatchError("a record runs past the end of the batch") from None
    if pos != end:
        raise KafkaBatchError(f"{end - pos} bytes after the batch's {count} records")
    return offset_deltas, timestamp_deltas, keys, values, headers


_NULL = b"\x01"  # zigzag(-1): a null key, value or header value
_SMALL_ZIGZAG = []
for _value in range(1 << 14):
    _out = bytearray()
    write_varlong(_out, _value)
    _SMALL_ZIGZAG.append(bytes(_out))
del _value, _out


def _zigzag(value: int) -> bytes:
    """A zigzag varlong's bytes; the 0..16383 a record's lengths and deltas mostly are come
    from a table built at import (one list index instead of a loop of appends)."""
    if 0 <= value < 16384:
        return _SMALL_ZIGZAG[value]
    out = bytearray()
    write_varlong(out, value)
    return bytes(out)


def encode_batch(values, keys=None, timestamps=None, headers=None, *,
                 codec: int = compression.NONE, timestamp_type: int = CREATE_TIME,
                 max_timestamp: int | None = None, base_offset: int = 0,
                 partition_leader_epoch: int = -1, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1,
                 transactional: bool = False) -> bytes:
    """One v2 batch of ``len(values)`` records with offset deltas 0..n-1.

    ``timestamps``: one int for all records or a list of CreateTimes (ms); the base timestamp
    is the first, each record stores its delta. ``max_timestamp`` defaults to the largest
    timestamp; for ``LOG_APPEND_TIME`` pass the append time (Kafka consumers read it as every
    record's timestamp). ``headers``: None or per record None / a list of (str, bytes|None).
    """
    n = len(values)
    if n == 0:
        raise ValueError("a batch needs at least one record")
    keys = [None] * n if keys is None else keys
    times = [timestamps or 0] * n if timestamps is None or isinstance(timestamps, int) else list(timestamps)
    if len(keys) != n or len(times) != n or (headers is not None and len(headers) != n):
        raise ValueError("keys, timestamps and headers must be as long as values")
    base_timestamp = times[0]
    parts = []
    append = parts.append
    for i in range(n):
        key, value = keys[i], values[i]
        fields = [b"\x00", _zigzag(times[i] - base_timestamp), _zigzag(i),
                  _NULL if key is None else _zigzag(len(key)), key or b"",
                  _NULL if value is None else _zigzag(len(value)), value or b""]
        pairs = headers[i] if headers is not None and headers[i] else ()
        fields.append(_zigzag(len(pairs)))
        for header_key, header_value in pairs:
            raw = header_key.encode("utf-8")
            fields += [_zigzag(len(raw)), raw,
                       _NULL if header_value is None else _zigzag(len(header_value)),
                       header_value or b""]
        record = b"".join(fields)
        append(_zigzag(len(record)))
        append(record)
    body = b"".join(parts)
    records = compression.compress(codec, bytes(body))
    if max_timestamp is None:
        max_timestamp = max(times)
    attributes = (codec & CODEC_MASK) | (TIMESTAMP_LOG_APPEND if timestamp_type == LOG_APPEND_TIME else 0) \
        | (TRANSACTIONAL if transactional else 0)
    header = bytearray(HEADER.pack(base_offset, HEADER_SIZE - _LENGTH_PREFIX + len(records),
                                   partition_leader_epoch, MAGIC, 0, attributes, n - 1,
                                   base_timestamp, max_timestamp, producer_id, producer_epoch,
                                   base_sequence, n))
    crc = crc32c(records, crc32c(memoryview(header)[_CRC_START:]))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + records


def assert_decodes_as_the_oracle(decode_records, body: bytes, count: int) -> None:
    """``decode_records(body, count)`` gives the oracle's records, or raises
    ``KafkaBatchError`` where the oracle does (or where a delta the oracle read does not fit
    an int64, which the column-wise decoder refuses)."""
    from tslog.protocol.kafka.record_batch import _cut

    try:
        old = _decode_records(body, count)
    except KafkaBatchError:
        old = None
    try:
        new = decode_records(body, count)
    except KafkaBatchError:
        assert old is None or any(not -(1 << 63) <= d < 1 << 63 for d in old[1] + old[0])
        return
    assert old is not None
    assert new.offset_deltas.tolist() == old[0] and new.timestamp_deltas.tolist() == old[1]
    assert _cut(new.keys, new.key_lengths) == old[2]
    assert _cut(new.values, new.value_lengths) == old[3]
    assert (new.headers or [[] for _ in range(count)]) == old[4]
