"""Decode a run of batches (one Fetch response's worth) into one set of columns.

Why not ``decode_columns`` per batch: its checks and offsets cost about thirty numpy calls a
batch, and at 8192 records a batch those calls, not the bytes, are most of a reader's time
(measured on the Spark connector's read path: 61 % of its decoding thread was in
``decode_columns``, 8192-record batches, 8 MiB responses). Here the
length, create-time and size checks of every batch run as one vectorised pass over the
concatenated length and create-time columns, so the numpy work is a constant number of calls
per response, and the per-batch Python work is the header, the CRC and a few slices.

What is accepted is exactly what ``check_section`` accepts, batch by batch
(``tests/property/test_many_batches.py`` holds the two together): a reader never decodes
less than the broker validated, nor more.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._record_check import (
    MAX_UNCOMPRESSED_BYTES,
    SECTION_SIZES,
    unpack_header_blob,
    inflate,
    section_sizes,
)
from .batch_header import (
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    BatchFormatError,
    checked_header,
    verify_crc as verify_crc_of,
)
from .errors import CorruptRecordsError


class ColumnsOfBatches(NamedTuple):
    """Batches decoded as one run of rows; row ``r`` of batch ``i`` is ``starts[i] + r``.

    Offsets are cumulative over all batches (int64, a null adds no bytes): the key of row
    ``r`` of batch ``i`` is ``keys[i][key_offsets[r'] - key_offsets[starts[i]]:...]`` with
    ``r' = starts[i] + r``. ``keys[i]``/``values[i]`` are views of batch ``i`` (or of its
    decompressed section): keep the batches unmodified while the columns are in use.
    """

    starts: list  # int[k + 1]: first row of each batch, then the row count
    base_offsets: list  # int[k]
    log_append_times: list  # int[k], ms
    create_time: np.ndarray  # int64[rows], ms
    key_offsets: np.ndarray  # int64[rows + 1]
    key_valid: np.ndarray | None  # bool[rows], None when no key is null
    keys: list  # memoryview[k]
    value_offsets: np.ndarray  # int64[rows + 1]
    value_valid: np.ndarray | None
    values: list  # memoryview[k]
    headers: list | None  # rows entries (None or tuple of (str, bytes)), None when none has

    @property
    def row_count(self) -> int:
        return self.starts[-1]


class _Sections:
    """Per-batch facts gathered by the one Python pass over the headers."""

    __slots__ = ("starts", "bases", "lats", "firsts", "mins", "maxes", "create", "key_lengths",
                 "value_lengths", "key_sizes", "value_sizes", "keys", "values", "headers")

    def __init__(self) -> None:
        self.starts, self.bases, self.lats = [0], [], []
        self.firsts, self.mins, self.maxes = [], [], []
        self.create, self.key_lengths, self.value_lengths = [], [], []
        self.key_sizes, self.value_sizes = [], []
        self.keys, self.values, self.headers = [], [], []


def decode_batches(batches, *, verify_crc: bool = True,
                   max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES,
                   allocate=bytearray) -> ColumnsOfBatches:
    """Decode ``batches`` (each exactly one batch, bytes-like) into one ``ColumnsOfBatches``.

    ``allocate(size)`` gives the writable buffers of the concatenated columns. A reader that
    decodes response after response passes a pool's allocator (``pyarrow.allocate_buffer``):
    fresh megabyte-sized buffers from malloc come back from the kernel on every call, and
    their page faults cost more than the decoding (measured on the Spark connector's read
    path: 2.4 times the page faults and +40 % system time over 10^7 records).

    Raises:
        BatchFormatError: a bad header or CRC; CorruptRecordsError (a subclass) when a
            records section is inconsistent. Nothing else, whatever the bytes.
    """
    if not batches:
        raise BatchFormatError("no batch to decode")
    found = _Sections()
    for batch in batches:
        _gather(found, memoryview(batch).cast("B"), verify_crc, max_uncompressed_bytes)
    rows = found.starts[-1]
    starts = np.array(found.starts[:-1], dtype=np.int64)
    create_time = np.concatenate(found.create, out=_empty(rows, np.int64, allocate))
    if (not np.array_equal(create_time[starts], found.firsts)
            or not np.array_equal(np.minimum.reduceat(create_time, starts), found.mins)
            or not np.array_equal(np.maximum.reduceat(create_time, starts), found.maxes)):
        raise CorruptRecordsError("create times disagree with the batch header")
    all_starts = found.starts
    key_offsets, key_valid = _checked_offsets(found.key_lengths, found.key_sizes, all_starts,
                                              "key", allocate)
    value_offsets, value_valid = _checked_offsets(found.value_lengths, found.value_sizes,
                                                  all_starts, "value", allocate)
    headers = None
    if any(entries is not None for entries in found.headers):
        headers = []
        for entries, low, high in zip(found.headers, all_starts, all_starts[1:]):
            headers.extend([None] * (high - low) if entries is None else entries)
    return ColumnsOfBatches(all_starts, found.bases, found.lats, create_time, key_offsets,
                            key_valid, found.keys, value_offsets, value_valid, found.values,
                            headers)


def header_and_section(view: memoryview, with_crc: bool, max_uncompressed: int):
    """A batch's checked header and its records section (inflated if compressed): what both
    decoders start from."""
    header = checked_header(view)
    if with_crc:
        verify_crc_of(view, header)
    section = view[HEADER_SIZE:]
    if header.compression == COMPRESSION_ZSTD:
        section = inflate(section, max_uncompressed)
    return header, section


def _gather(found: _Sections, view: memoryview, with_crc: bool, max_uncompressed: int) -> None:
    """The per-batch scalar checks of ``check_section``, and views of its columns."""
    header, section = header_and_section(view, with_crc, max_uncompressed)
    n = header.record_count
    keys_bytes, values_bytes, headers_bytes = section_sizes(section, header)
    fixed = SECTION_SIZES.size + 16 * n
    found.starts.append(found.starts[-1] + n)
    found.bases.append(header.base_offset)
    found.lats.append(header.log_append_time)
    found.firsts.append(header.first_create_time)
    found.mins.append(header.min_create_time)
    found.maxes.append(header.max_create_time)
    found.create.append(np.frombuffer(section, "<i8", n, SECTION_SIZES.size))
    found.key_lengths.append(np.frombuffer(section, "<i4", n, SECTION_SIZES.size + 8 * n))
    found.value_lengths.append(np.frombuffer(section, "<i4", n, SECTION_SIZES.size + 12 * n))
    found.key_sizes.append(keys_bytes)
    found.value_sizes.append(values_bytes)
    values_start = fixed + keys_bytes
    found.keys.append(section[fixed:values_start])
    found.values.append(section[values_start:values_start + values_bytes])
    found.headers.append(unpack_header_blob(section[values_start + values_bytes:], n)
                         if headers_bytes else None)


def _empty(count: int, dtype, allocate) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.frombuffer(allocate(count * dtype.itemsize), dtype=dtype, count=count)


def _checked_offsets(lengths: list, sizes: list, starts: list, what: str, allocate):
    """Cumulative int64 offsets and validity of concatenated length columns, after checking
    that every length is >= -1 and each batch's lengths add up to its blob's size."""
    rows = starts[-1]
    column = np.concatenate(lengths, out=_empty(rows, np.int32, allocate))
    offsets = _empty(rows + 1, np.int64, allocate)
    offsets[0] = 0
    lowest = int(column.min())
    valid = None
    if lowest < 0:
        if lowest < -1:
            raise CorruptRecordsError(f"negative {what} length other than -1")
        valid = column >= 0
        np.maximum(column, 0, out=column)
    np.cumsum(column, dtype=np.int64, out=offsets[1:])  # int64: hostile int32s cannot wrap
    totals = offsets[starts[1:]] - offsets[starts[:-1]]
    if not np.array_equal(totals, sizes):
        bad = int(np.flatnonzero(totals != np.asarray(sizes, dtype=np.int64))[0])
        raise CorruptRecordsError(
            f"{what} lengths of batch {bad} add up to {int(totals[bad])} bytes, "
            f"its {what} blob holds {sizes[bad]}")
    return offsets, valid
