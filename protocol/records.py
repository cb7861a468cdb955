"""The records section of a batch, laid out column by column.

Why columns: at the rates tslog aims for, Python's per-object cost is the whole budget
(DESIGN.md's budget per record). A row-wise layout forces one ``unpack`` and one slice
per record on every reader. Here each field of every record sits in its own array, so a
producer builds a batch with a handful of C-level calls (``map(len, ...)``, ``b"".join``,
``struct.pack``) and a reader turns a batch into numpy arrays or Arrow columns with
``numpy.frombuffer`` and one ``cumsum``, never looping in Python over records. The Spark reader
gains most: Arrow built from buffers feeds Spark far faster than Python tuples (DESIGN.md, "On disk").

Layout of the (uncompressed) section that follows the 80-byte header, little-endian, with
``n = record_count`` from the header::

    uint32    keys_bytes       size of the keys blob
    uint32    values_bytes     size of the values blob
    uint32    headers_bytes    size of the headers blob (0 unless ATTR_HAS_HEADERS)
    int64[n]  create_time      absolute CreateTime of each record (ms)
    int32[n]  key_length       -1 for a null key
    int32[n]  value_length     -1 for a null value
    bytes     keys             the non-null keys back to back
    bytes     values           the non-null values back to back
    bytes     headers          msgpack list of n entries: nil or a list of [str, bin] pairs

With COMPRESSION_ZSTD the whole section is one zstd frame; the header and its CRC describe the
stored (compressed) bytes. See ``docs/storage-format.md``. Building lives in
``_record_builder.py`` and is re-exported here; this module decodes (a batch of a few records
can also be decoded row-wise, without numpy: ``_small_batches.py``). Decoding must be total:
whatever the bytes, it returns columns or raises a ``BatchFormatError``, because batches
arrive from peers and from disks. Whether a section can be decoded is decided by
``_record_check.check_section`` alone: the broker runs it before it accepts a batch and the
decoder runs it before it builds columns, so what the broker accepts every reader decodes.
"""

from __future__ import annotations

from itertools import repeat
from typing import Iterator, NamedTuple

import numpy as np

from ._many_batches import ColumnsOfBatches, decode_batches, header_and_section
from ._record_builder import MAX_BATCH_BYTES, ZSTD_LEVEL, Section, build_batch, seal_section
from ._record_check import (
    MAX_UNCOMPRESSED_BYTES,
    NULL_LENGTH,
    SECTION_SIZES,
    check_section,
)
from ._small_batches import ROWS_MAX_RECORDS, RecordRows, decode_rows
from .batch_header import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    BatchFormatError,
    BatchHeader,
    peek_length,
)
from .errors import CorruptRecordsError

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_UNCOMPRESSED_BYTES",
    "ROWS_MAX_RECORDS",
    "SECTION_SIZES",
    "ZSTD_LEVEL",
    "ColumnsOfBatches",
    "CorruptRecordsError",
    "Record",
    "RecordColumns",
    "RecordRows",
    "Section",
    "build_batch",
    "create_time_column",
    "decode_batches",
    "decode_columns",
    "decode_rows",
    "iter_records",
    "seal_section",
    "split_batches",
    "to_arrow",
]


class Record(NamedTuple):
    """One decoded record, as the client hands it to users."""

    offset: int
    create_time: int
    log_append_time: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]  # empty when the record has none


class RecordColumns(NamedTuple):
    """A decoded batch as columns; offsets arrays are ready for Arrow binary arrays.

    ``keys``/``values`` are views of the batch (or of its decompressed section): keep the
    batch unmodified while the columns are in use. ``headers`` is None when no record in the
    batch has headers, else one entry per record: None or a tuple of (str, bytes) tuples.
    """

    base_offset: int
    log_append_time: int
    create_time: np.ndarray  # int64[n], ms
    key_offsets: np.ndarray  # int32[n + 1]
    key_valid: np.ndarray  # bool[n], False for a null key
    keys: memoryview
    value_offsets: np.ndarray  # int32[n + 1]
    value_valid: np.ndarray  # bool[n]
    values: memoryview
    headers: list | None

    @property
    def record_count(self) -> int:
        return len(self.create_time)


# ---------------------------------------------------------------------------------- decoding


def _offsets(section, start: int, n: int, blob_bytes: int):
    """Turn a checked int32 length column into (int32 offsets[n + 1], bool valid[n])."""
    raw = section[start:start + 4 * n]
    if blob_bytes == 0 and raw == NULL_LENGTH * n:  # e.g. a batch without keys
        return np.zeros(n + 1, dtype=np.int32), np.zeros(n, dtype=bool)
    lengths = np.empty(n + 1, dtype=np.int32)  # the check proved the sums fit the batch
    lengths[0] = 0
    lengths[1:] = np.frombuffer(raw, dtype="<i4")
    valid = lengths[1:] >= 0
    if not valid.all():
        np.maximum(lengths, 0, out=lengths)
    return lengths.cumsum(dtype=np.int32), valid


def _decode_section(header: BatchHeader, section: memoryview) -> RecordColumns:
    # The same check the broker ran before it accepted the batch: whatever it accepted,
    # this decodes (tests/property/test_batch_validation.py holds the two together).
    keys_bytes, values_bytes, headers = check_section(section, header)
    n = header.record_count
    fixed = SECTION_SIZES.size + 16 * n
    key_offsets, key_valid = _offsets(section, SECTION_SIZES.size + 8 * n, n, keys_bytes)
    value_offsets, value_valid = _offsets(section, SECTION_SIZES.size + 12 * n, n, values_bytes)
    values_start = fixed + keys_bytes
    return RecordColumns(
        base_offset=header.base_offset,
        log_append_time=header.log_append_time,
        create_time=np.frombuffer(section, "<i8", n, SECTION_SIZES.size).astype(np.int64),
        key_offsets=key_offsets,
        key_valid=key_valid,
        keys=section[fixed:values_start],
        value_offsets=value_offsets,
        value_valid=value_valid,
        values=section[values_start:values_start + values_bytes],
        headers=None if headers is None else list(headers),
    )


def create_time_column(header: BatchHeader) -> tuple[int, int] | None:
    """(start, length) in the stored batch of its records' CreateTime column, or None when
    the section is compressed (only a decoded section has the column then).

    Why: a lookup by CreateTime inside a batch needs that column alone; a stored batch was
    checked when it was appended, so its 8 bytes a record can be read from the file
    without the rest of the batch (the keys and values are most of it)."""
    if header.attributes & COMPRESSION_MASK:
        return None
    return HEADER_SIZE + SECTION_SIZES.size, 8 * header.record_count


def decode_columns(
    batch, *, verify_crc: bool = True, max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES
) -> RecordColumns:
    """Decode one complete batch into columns without a Python loop over records.

    Args:
        batch: exactly one batch (bytes-like; ``len(batch)`` must equal its batch length).
        verify_crc: check the CRC too (a pass over every byte); pass False only when the caller
            has just run ``validate_batch`` on the same bytes.
        max_uncompressed_bytes: refuse compressed sections that inflate beyond this.

    Returns:
        RecordColumns viewing ``batch`` (or its decompressed section).

    Raises:
        BatchFormatError: a bad header or CRC; CorruptRecordsError (a subclass) when the
            records section is inconsistent. Nothing else, whatever the bytes.
    """
    header, section = header_and_section(memoryview(batch).cast("B"), verify_crc,
                                         max_uncompressed_bytes)
    return _decode_section(header, section)


def split_batches(records) -> list[memoryview]:
    """Cut a ``records`` value (batches back to back, as in a Fetch response) into batches.

    Only the length fields are read; decode or validate each piece afterwards.

    Raises:
        BatchFormatError: a length field cannot be right, or the data ends inside a batch.
    """
    view = memoryview(records).cast("B")
    end = len(view)
    batches = []
    position = 0
    while position < end:
        if end - position < HEADER_SIZE:
            raise BatchFormatError(f"{end - position} trailing bytes are not a whole batch")
        length = peek_length(view, position)
        if length < HEADER_SIZE or length > end - position:
            raise BatchFormatError(f"batch at byte {position} claims {length} bytes")
        batches.append(view[position:position + length])
        position += length
    return batches


def iter_records(batch, *, verify_crc: bool = True) -> Iterator[Record]:
    """Decode a batch and return an iterator of ``Record`` (errors surface on the call)."""
    return _records(decode_columns(batch, verify_crc=verify_crc))


def _records(columns: RecordColumns) -> Iterator[Record]:
    n = columns.record_count
    if columns.headers is None:
        headers = map(list, repeat((), n))  # a fresh empty list per record, built in C
    else:
        headers = [list(entry) if entry else [] for entry in columns.headers]
    rows = zip(
        range(columns.base_offset, columns.base_offset + n),
        columns.create_time.tolist(),
        repeat(columns.log_append_time, n),
        field_slices(columns.keys, columns.key_offsets, columns.key_valid),
        field_slices(columns.values, columns.value_offsets, columns.value_valid),
        headers,
    )
    # tuple.__new__ skips the NamedTuple's Python-level __new__: a third of the cost per record.
    return map(tuple.__new__, repeat(Record), rows)


def field_slices(blob, offsets: np.ndarray, valid: np.ndarray):
    """Cut a blob into one bytes per record, None where the record's field is null (an
    iterable of Nones when every record's is)."""
    if not valid.any():
        return repeat(None, len(valid))
    data = bytes(blob)
    bounds = offsets.tolist()
    if valid.all():
        return [data[start:end] for start, end in zip(bounds, bounds[1:])]
    return [data[start:end] if present else None
            for start, end, present in zip(bounds, bounds[1:], valid.tolist())]


def to_arrow(columns: RecordColumns):
    """Return a ``pyarrow.RecordBatch`` (key, value, offset, createTime, timestamp) from buffers.

    ``timestamp`` is the batch's LogAppendTime in ms, repeated. Arrow views the numpy arrays and
    the batch bytes without copying them. Requires the optional ``pyarrow`` dependency.
    """
    try:
        import pyarrow as pa  # optional dependency; only readers that want Arrow pay for it
    except ImportError as exc:
        raise ImportError("to_arrow needs pyarrow: pip install 'tslog[arrow]'") from exc

    n = columns.record_count

    def binary(offsets: np.ndarray, valid: np.ndarray, blob) -> pa.Array:
        null_count = n - int(np.count_nonzero(valid))
        bitmap = None
        if null_count:
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
        buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(blob)]
        return pa.Array.from_buffers(pa.binary(), n, buffers, null_count=null_count)

    base = columns.base_offset
    return pa.RecordBatch.from_arrays(
        [
            binary(columns.key_offsets, columns.key_valid, columns.keys),
            binary(columns.value_offsets, columns.value_valid, columns.values),
            pa.array(np.arange(base, base + n, dtype=np.int64)),
            pa.array(columns.create_time),
            pa.array(np.full(n, columns.log_append_time, dtype=np.int64)),
        ],
        names=["key", "value", "offset", "createTime", "timestamp"],
    )
