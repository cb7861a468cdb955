"""Kafka's RecordBatch v2 (magic 2): decode and encode, with CRC32C and every codec.

Layout (big-endian; the CRC covers ``attributes`` to the end)::

    int64 base_offset  int32 batch_length  int32 partition_leader_epoch  int8 magic (2)
    uint32 crc  int16 attributes  int32 last_offset_delta  int64 base_timestamp
    int64 max_timestamp  int64 producer_id  int16 producer_epoch  int32 base_sequence
    int32 record_count  records (compressed as a whole when attributes & 7 is not 0)

    record: varint length, int8 attributes, varlong timestamp_delta, varint offset_delta,
            varint key length (-1 null) + key, varint value length + value,
            varint header count, then per header varint key length + UTF-8 key,
            varint value length (-1 null) + value

The records section is converted column-wise in ``record_columns.py`` (vectorised varints,
ragged blob copies by index arithmetic); this module frames batches, checks CRCs and handles
codecs. ``KafkaBatch`` keeps list columns for callers that want records one by one (tests,
tools); the broker's hot path takes ``decode_batch_columns`` and ``encode_many`` (a Fetch
response's batches at once) instead.
Magic 0 and 1 (pre-0.11 message sets) are refused: every client the issue names writes v2.
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

import numpy as np
from crc32c import crc32c

from . import compression
from .._record_builder import pack_column
from .errors import KafkaBatchError
from .record_columns import RecordColumns, decode_records, encode_records, layout_records

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
_CRC_START = 21  # attributes onwards
_LENGTH_PREFIX = 12  # base offset and batch length: not counted in batch_length
_CRC = struct.Struct(">I")  # at byte 17
MAGIC = 2
CODEC_MASK = 0x07
TIMESTAMP_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20
CREATE_TIME, LOG_APPEND_TIME = 0, 1


class KafkaBatch(NamedTuple):
    """One decoded batch: the header's fields and the records as parallel columns."""

    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[list[tuple[str, bytes | None]]]

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_LOG_APPEND else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL)

    @property
    def record_count(self) -> int:
        return len(self.values)

    def timestamps(self) -> list[int]:
        """Each record's timestamp as Kafka consumers read it: the batch's max timestamp for
        LogAppendTime, else base timestamp plus delta."""
        if self.timestamp_type == LOG_APPEND_TIME:
            return [self.max_timestamp] * len(self.values)
        base = self.base_timestamp
        return [base + delta for delta in self.timestamp_deltas]


def split_batches(records, allow_partial_tail: bool = False) -> list[memoryview]:
    """Cut a ``records`` field (batches back to back) into batches by their length fields.

    A Fetch response may end with a partial batch (a broker cuts at max bytes); a consumer
    passes ``allow_partial_tail=True`` to drop it. Anywhere else a short batch is an error.
    """
    view = memoryview(records).cast("B") if records is not None else memoryview(b"")
    out, pos, end = [], 0, len(view)
    while pos < end:
        if pos + _LENGTH_PREFIX > end:
            if allow_partial_tail:
                break
            raise KafkaBatchError(f"{end - pos} trailing bytes are not a batch")
        (length,) = struct.unpack_from(">i", view, pos + 8)
        if length < HEADER_SIZE - _LENGTH_PREFIX:
            raise KafkaBatchError(f"batch length {length} is shorter than a header")
        stop = pos + _LENGTH_PREFIX + length
        if stop > end:
            if allow_partial_tail:
                break
            raise KafkaBatchError(f"batch of {length} bytes runs past the records' end")
        out.append(view[pos:stop])
        pos = stop
    return out


class BatchHead(NamedTuple):
    """A batch's header fields, for the column-wise path (``decode_batch_columns``)."""

    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK


def decode_batch_columns(data, *, verify_crc: bool = True,
                         max_uncompressed: int = compression.MAX_UNCOMPRESSED,
                         fields: tuple | None = None) -> tuple[BatchHead, RecordColumns]:
    """Decode exactly one batch into its header and its records as columns. Raises
    ``KafkaBatchError`` (``UnsupportedCompression`` for a codec this install lacks) for
    anything that is not a well-formed v2 batch. An uncompressed batch is read where it
    lies (a view of a Produce request), never copied whole. ``fields``: the header as
    ``HEADER.unpack_from`` gave it, from a caller that decoded it already (checked here
    all the same), so it is not decoded twice."""
    buf = memoryview(data).cast("B")
    if len(buf) < HEADER_SIZE:
        raise KafkaBatchError(f"{len(buf)} bytes are shorter than a batch header")
    (base_offset, length, leader_epoch, magic, crc, attributes, last_offset_delta,
     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
     count) = HEADER.unpack_from(buf) if fields is None else fields
    if magic != MAGIC:
        raise KafkaBatchError(f"record batch magic {magic}: only v2 (magic 2) is supported")
    if length + _LENGTH_PREFIX != len(buf):
        raise KafkaBatchError(f"batch length {length} does not match its {len(buf)} bytes")
    if verify_crc and crc32c(buf[_CRC_START:]) != crc:
        raise KafkaBatchError("record batch CRC32C mismatch")
    if count < 0 or last_offset_delta < 0:
        raise KafkaBatchError(f"record count {count} or last offset delta is negative")
    codec = attributes & CODEC_MASK
    body = buf[HEADER_SIZE:] if codec == compression.NONE \
        else compression.decompress(codec, buf[HEADER_SIZE:], max_uncompressed)
    if count > len(body):
        raise KafkaBatchError(f"{count} records in {len(body)} bytes")
    head = BatchHead(base_offset, leader_epoch, attributes, last_offset_delta, base_timestamp,
                     max_timestamp, producer_id, producer_epoch, base_sequence, count)
    return head, decode_records(body, count)


def decode_batch(data, *, verify_crc: bool = True,
                 max_uncompressed: int = compression.MAX_UNCOMPRESSED) -> KafkaBatch:
    """Decode exactly one batch with list columns (errors as ``decode_batch_columns``)."""
    head, columns = decode_batch_columns(data, verify_crc=verify_crc,
                                         max_uncompressed=max_uncompressed)
    count = head.record_count
    headers = columns.headers if columns.headers is not None else [[] for _ in range(count)]
    return KafkaBatch(*head[:-1], columns.offset_deltas.tolist(),
                      columns.timestamp_deltas.tolist(),
                      _cut(columns.keys, columns.key_lengths),
                      _cut(columns.values, columns.value_lengths), headers)


def iter_batches(records, allow_partial_tail: bool = False, verify_crc: bool = True
                 ) -> Iterator[KafkaBatch]:
    for piece in split_batches(records, allow_partial_tail):
        yield decode_batch(piece, verify_crc=verify_crc)


def _cut(blob: bytes, lengths) -> list:
    """A (lengths, blob) column as a list of bytes / None (the list-based ``KafkaBatch``)."""
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.maximum(lengths, 0), out=bounds[1:])
    edges = bounds.tolist()
    return [None if size < 0 else blob[start:end]
            for start, end, size in zip(edges, edges[1:], lengths.tolist())]


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
    if timestamps is None or isinstance(timestamps, int):
        times = np.full(n, timestamps or 0, dtype=np.int64)
    else:
        if len(timestamps) != n:
            raise ValueError("keys, timestamps and headers must be as long as values")
        try:
            times = np.array(timestamps, dtype=np.int64)
        except OverflowError:
            raise ValueError("a timestamp is out of the int64 range") from None
    if (keys is not None and len(keys) != n) or (headers is not None and len(headers) != n):
        raise ValueError("keys, timestamps and headers must be as long as values")
    value_lengths, value_blob = pack_column(values, n, "values")
    if keys is None:
        key_lengths, key_blob = np.full(n, -1, dtype=np.int32), b""
    else:
        key_lengths, key_blob = pack_column(keys, n, "keys")
        key_lengths = np.frombuffer(key_lengths, dtype="<i4")
    return encode_columns(times, key_lengths, key_blob, np.frombuffer(value_lengths, dtype="<i4"),
                          value_blob, headers, codec=codec, timestamp_type=timestamp_type,
                          max_timestamp=max_timestamp, base_offset=base_offset,
                          partition_leader_epoch=partition_leader_epoch,
                          producer_id=producer_id, producer_epoch=producer_epoch,
                          base_sequence=base_sequence, transactional=transactional)


def encode_columns(times: np.ndarray, key_lengths: np.ndarray, keys, value_lengths: np.ndarray,
                   values, headers=None, *, codec: int = compression.NONE,
                   timestamp_type: int = CREATE_TIME, max_timestamp: int | None = None,
                   base_offset: int = 0, partition_leader_epoch: int = -1,
                   producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                   transactional: bool = False) -> bytes:
    """``encode_batch`` from columns: int64 ``times`` (ms), int32 key and value lengths (-1
    null) with their blobs (``record_columns.py``); headers as for ``encode_batch``. No
    Python work per record but for records that carry headers."""
    n = len(times)
    base_timestamp = int(times[0])
    low, high = int(times.min()), int(times.max())
    if low - base_timestamp < -(1 << 63) or high - base_timestamp >= 1 << 63:
        raise ValueError("timestamps too far apart for a varlong delta")
    body = encode_records(times - np.int64(base_timestamp), key_lengths, keys, value_lengths,
                          values, headers)
    records = compression.compress(codec, body)
    if max_timestamp is None:
        max_timestamp = high
    attributes = (codec & CODEC_MASK) | (TRANSACTIONAL if transactional else 0) \
        | (TIMESTAMP_LOG_APPEND if timestamp_type == LOG_APPEND_TIME else 0)
    header = bytearray(HEADER.pack(base_offset, HEADER_SIZE - _LENGTH_PREFIX + len(records),
                                   partition_leader_epoch, MAGIC, 0, attributes, n - 1,
                                   base_timestamp, max_timestamp, producer_id, producer_epoch,
                                   base_sequence, n))
    crc = crc32c(records, crc32c(memoryview(header)[_CRC_START:]))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + records


class BatchFields(NamedTuple):
    """The header fields ``encode_many`` takes per batch; records are the shared columns'."""

    base_offset: int
    partition_leader_epoch: int
    max_timestamp: int | None  # None: the batch's largest timestamp
    producer_id: int
    producer_epoch: int
    base_sequence: int


def encode_many(times: np.ndarray, key_lengths: np.ndarray, keys, value_lengths: np.ndarray,
                values, headers, starts: list, fields: list, *,
                timestamp_type: int = CREATE_TIME) -> bytes:
    """Uncompressed batches back to back, batch ``i`` holding rows ``starts[i]`` to
    ``starts[i + 1] - 1`` of the columns (as for ``encode_columns``; ``keys``/``values`` the
    blobs of all rows) with the header fields ``fields[i]``. Equal, byte for byte, to
    ``encode_columns`` per batch joined (the property tests hold them together), but the
    records of every batch are laid out by one set of numpy calls, room for each header
    left before its batch, and only the header and its CRC32C cost Python work per batch.

    Raises ``ValueError`` when a batch's timestamps are too far apart for varlong deltas.
    """
    k = len(fields)
    n = starts[-1]
    first_rows = np.asarray(starts[:-1], dtype=np.int64)
    counts = np.diff(np.asarray(starts, dtype=np.int64))
    bases = times[first_rows]
    lows, highs = np.minimum.reduceat(times, first_rows), np.maximum.reduceat(times, first_rows)
    base_list, low_list, high_list = bases.tolist(), lows.tolist(), highs.tolist()
    for base, low, high in zip(base_list, low_list, high_list):
        if low - base < -(1 << 63) or high - base >= 1 << 63:
            raise ValueError("timestamps too far apart for a varlong delta")
    row_bases = np.repeat(bases, counts)
    offset_deltas = np.arange(n, dtype=np.int64) - np.repeat(first_rows, counts)
    lead = np.zeros(n, dtype=np.int64)
    lead[first_rows] = HEADER_SIZE
    out, record_starts = layout_records(times - row_bases, offset_deltas, key_lengths, keys,
                                        value_lengths, values, headers, lead)
    view = memoryview(out)
    heads = (record_starts[first_rows] - HEADER_SIZE).tolist() + [len(out)]
    attributes = TIMESTAMP_LOG_APPEND if timestamp_type == LOG_APPEND_TIME else 0
    pack, pack_crc = HEADER.pack_into, _CRC.pack_into
    for i in range(k):
        head, stop, count, field = heads[i], heads[i + 1], starts[i + 1] - starts[i], fields[i]
        max_timestamp = high_list[i] if field.max_timestamp is None else field.max_timestamp
        pack(view, head, field.base_offset, stop - head - _LENGTH_PREFIX,
             field.partition_leader_epoch, MAGIC, 0, attributes, count - 1, base_list[i],
             max_timestamp, field.producer_id, field.producer_epoch, field.base_sequence, count)
        pack_crc(view, head + 17, crc32c(view[head + _CRC_START:stop]))
    return out.tobytes()
