"""Building record batches: the producer's side of ``records.py`` (layout documented there).

Kept apart from decoding because it has its own concerns: turning user lists into columns with
C-level calls only (``map(len, ...)``, ``b"".join``, ``struct.pack``), catching wrong element
types without a per-record type check, and sealing the CRC without copying the records twice.
"""

from __future__ import annotations

import struct
import threading
import time
from itertools import compress, repeat
from operator import is_not
from typing import NamedTuple

import msgpack
import numpy as np
import zstandard
from crc32c import crc32c

from ._record_check import MAX_UNCOMPRESSED_BYTES, NULL_LENGTH, SECTION_SIZES
from .batch_header import (
    ATTR_HAS_HEADERS,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    CRC_START,
    FORMAT_MAGIC,
    HEADER_SIZE,
    HEADER_STRUCT,
    NO_TIMESTAMP,
    BatchHeader,
    CheckedBatch,
)

MAX_BATCH_BYTES = 2**31 - 1  # batch_length is an int32
ZSTD_LEVEL = 3
# Up to this many records a column is summed and ranged with the builtins: numpy's fixed
# cost per call is larger than the work for a few records, and a producer writing
# round-robin over many partitions builds batches of one or two records.
SMALL_BATCH_RECORDS = 32
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# zstandard's compressor objects must not be used by two threads at once.
_zstd = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    try:
        return _zstd.compressor
    except AttributeError:
        _zstd.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_content_size=True)
        return _zstd.compressor


def pack_column(items, n: int, what: str) -> tuple[bytes, bytes]:
    """Return (int32 lengths column, blob) for a list of bytes-like or None."""
    if len(items) != n:
        raise ValueError(f"{len(items)} {what} for {n} values")
    try:
        lengths = list(map(len, items))  # fast path: no None present
        present = items
    except TypeError:
        valid = list(map(is_not, items, repeat(None)))
        present = list(compress(items, valid))
        try:
            lengths = list(map(len, present))
        except TypeError:
            raise TypeError(f"{what} must be bytes-like objects or None") from None
    try:
        blob = b"".join(present)
    except TypeError:
        raise TypeError(f"{what} must be bytes-like objects or None") from None
    if len(blob) > MAX_BATCH_BYTES:
        raise ValueError(f"{what} add up to {len(blob)} bytes, more than a batch can hold")
    try:
        if present is items:
            column = struct.pack(f"<{n}i", *lengths)
            total = (sum(lengths) if n <= SMALL_BATCH_RECORDS
                     else np.frombuffer(column, dtype="<i4").sum(dtype=np.int64))
        else:
            array = np.full(n, -1, dtype="<i4")
            array[np.array(valid, dtype=bool)] = lengths
            column = array.tobytes()
            total = sum(lengths)
    except (struct.error, OverflowError):  # a len() no byte string of this size can have
        total = -1
    if total != len(blob):
        # len() of an array or a cast memoryview counts items, not bytes.
        raise TypeError(f"{what} must have 1-byte items (bytes, bytearray, memoryview of bytes)")
    return column, blob


def _check_int64(value, what: str) -> int:
    if not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = int(value)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{what} {value} does not fit in an int64")
    return value


def _pack_create_times(create_times, n: int, default) -> tuple[bytes, int, int, int]:
    """Return (int64 column, first, min, max)."""
    if create_times is None:
        create_times = time.time_ns() // 1_000_000 if default is None else default
    if isinstance(create_times, (int, np.integer)):  # one time for every record
        value = _check_int64(create_times, "create time")
        return struct.pack("<q", value) * n, value, value, value
    if len(create_times) != n:
        raise ValueError(f"{len(create_times)} create times for {n} values")
    try:
        column = struct.pack(f"<{n}q", *create_times)
    except struct.error:
        for value in create_times:  # error path only: name the culprit
            _check_int64(value, "create time")
        raise TypeError("create times must be ints") from None
    if n <= SMALL_BATCH_RECORDS:  # struct.pack took them, so they are ints
        return column, int(create_times[0]), int(min(create_times)), int(max(create_times))
    array = np.frombuffer(column, dtype="<i8")
    return column, int(array[0]), int(array.min()), int(array.max())


def pack_headers(headers, n: int) -> bytes:
    """Return the msgpack headers blob, or b"" when no record has headers."""
    if headers is None:
        return b""
    if len(headers) != n:
        raise ValueError(f"{len(headers)} header entries for {n} values")
    entries = []
    for entry in headers:
        if entry is not None:
            if not isinstance(entry, (list, tuple)):
                raise TypeError("each headers entry must be None or a list of (str, bytes)")
            for pair in entry:
                if not (
                    isinstance(pair, (list, tuple))
                    and len(pair) == 2
                    and isinstance(pair[0], str)
                    and isinstance(pair[1], (bytes, bytearray, memoryview))
                ):
                    raise TypeError(f"header {pair!r} is not a (str, bytes) pair")
        entries.append(entry or None)  # one spelling of "no headers": nil
    if not any(entries):
        return b""
    return msgpack.packb(entries, use_bin_type=True)


def build_batch(
    values,
    keys=None,
    create_times=None,
    headers=None,
    compression: int = COMPRESSION_NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    default_create_time: int | None = None,
) -> bytes:
    """Encode records into one complete batch, ready to send or append.

    Args:
        values: list of bytes-like or None (a null value), at least one.
        keys: None (all keys null) or a list of bytes-like or None, as long as ``values``.
        create_times: None (every record gets ``default_create_time``, or the current wall
            clock in ms when that is None too), one int for all records, or a list of ints (ms).
        headers: None, or one entry per record: None or a list of (str, bytes) pairs.
        compression: COMPRESSION_NONE or COMPRESSION_ZSTD.
        producer_id, producer_epoch, base_sequence: idempotence fields, -1 when unused.
        default_create_time: see ``create_times``.

    Returns:
        The batch, with base offset 0, leader epoch -1, LogAppendTime NO_TIMESTAMP and a
        valid CRC.

    Raises:
        ValueError: no records, lists of different lengths, an unknown compression, or values
            out of range (times outside int64, a batch over 2 GiB).
        TypeError: an element of the wrong type.
    """
    n = len(values)
    if n == 0:
        raise ValueError("a batch needs at least one record")
    if compression not in (COMPRESSION_NONE, COMPRESSION_ZSTD):
        raise ValueError(f"unknown compression {compression!r}")
    value_lengths, values_blob = pack_column(values, n, "values")
    if keys is None:
        key_lengths, keys_blob = NULL_LENGTH * n, b""
    else:
        key_lengths, keys_blob = pack_column(keys, n, "keys")
    times, first_time, min_time, max_time = _pack_create_times(create_times, n, default_create_time)
    headers_blob = pack_headers(headers, n)
    sizes = SECTION_SIZES.pack(len(keys_blob), len(values_blob), len(headers_blob))
    parts = [sizes, times, key_lengths, value_lengths, keys_blob, values_blob, headers_blob]
    section = Section(parts, n, first_time, min_time, max_time, bool(headers_blob))
    return seal_section(section, compression, producer_id, producer_epoch, base_sequence)


class Section(NamedTuple):
    """A records section encoded already (uncompressed, the layout in ``records.py``), with
    what its batch header needs. Why: a caller that has the columns at hand (the mirror
    copies fetched batches) builds the section with a few array operations and no list per
    record; ``seal_section`` then adds the header, so the producer's idempotence fields are
    stamped only when the batch is sent."""

    parts: list  # bytes-like pieces; joined, they are the section
    record_count: int
    first_time: int
    min_time: int
    max_time: int
    has_headers: bool

    @property
    def size(self) -> int:
        return sum(map(len, self.parts))

    def create_time(self, index: int) -> int:
        """Record ``index``'s CreateTime, read from the section's time column."""
        if not 0 <= index < self.record_count:
            raise IndexError(f"record {index} of a section of {self.record_count}")
        position, wanted = SECTION_SIZES.size + 8 * index, b""
        for part in self.parts:
            if position < len(part):
                wanted += bytes(part[position:position + 8 - len(wanted)])
                if len(wanted) == 8:
                    return int.from_bytes(wanted, "little", signed=True)
                position = 0
            else:
                position -= len(part)
        raise ValueError("the section is shorter than its time column")


def seal_section(section: Section, compression: int = COMPRESSION_NONE, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """The complete batch of ``section`` (see ``build_batch`` for the arguments and the
    header it gets). Nothing here looks at single records: the caller vouches that the
    section is well formed (the broker checks it again before it accepts it)."""
    return seal_checked(section, compression, producer_id, producer_epoch, base_sequence).data


def seal_checked(section: Section, compression: int = COMPRESSION_NONE, producer_id: int = -1,
                 producer_epoch: int = -1, base_sequence: int = -1) -> CheckedBatch:
    """``seal_section``'s batch with the header it packed and its records' running CRC:
    what the broker's Kafka listener hands the log, so the header a converted batch gets
    here is never parsed back from its bytes (``batch_header.CheckedBatch``).

    Raises:
        ValueError: an unknown compression, a section over the zstd limit or over 2 GiB,
            or producer fields out of range.
    """
    if compression not in (COMPRESSION_NONE, COMPRESSION_ZSTD):
        raise ValueError(f"unknown compression {compression!r}")
    n = section.record_count
    if n <= 0:
        raise ValueError("a batch needs at least one record")
    parts = section.parts
    attributes = compression | (ATTR_HAS_HEADERS if section.has_headers else 0)
    section_bytes = sum(map(len, parts))
    if compression == COMPRESSION_ZSTD:
        if section_bytes > MAX_UNCOMPRESSED_BYTES:
            raise ValueError(f"{section_bytes} bytes of records exceed the zstd batch limit")
        parts = [_compressor().compress(b"".join(parts))]
        section_bytes = len(parts[0])
    batch_length = HEADER_SIZE + section_bytes
    if batch_length > MAX_BATCH_BYTES:
        raise ValueError(f"a batch of {batch_length} bytes is too large")
    fields = [0, -1, 0, batch_length, FORMAT_MAGIC, attributes, 0, n - 1, n,
              section.first_time, section.min_time, section.max_time, NO_TIMESTAMP,
              producer_id, producer_epoch, 0, base_sequence]
    try:
        header = HEADER_STRUCT.pack(*fields)
    except struct.error as exc:
        raise ValueError(f"producer id, epoch or sequence out of range: {exc}") from None
    crc = 0
    for part in parts:
        crc = crc32c(part, crc)
    fields[2] = crc32c(memoryview(header)[CRC_START:], crc)  # records first: batch_header.py
    return CheckedBatch(b"".join([HEADER_STRUCT.pack(*fields), *parts]),
                        BatchHeader(*fields), crc)
