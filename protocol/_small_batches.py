"""A small batch's records as rows, without numpy: what a reader of one-record batches needs.

Why a second decoder: ``records.decode_columns`` turns a batch into numpy columns with a
constant number of numpy calls, the right shape for batches of many records, but each numpy
call has a fixed cost several times that of unpacking a few integers. A partition written by a
latency-sensitive producer (linger 0) holds batches of one record, and a reader that looks at a
record or two in each of a thousand partitions (the console's find by time) then spends
nearly all its time building arrays of length one. For a batch of at most
``ROWS_MAX_RECORDS`` records, ``decode_rows`` runs the very same checks (``header_and_section``
and ``check_section``, the broker's own: what the broker accepted, this decodes) and cuts the
keys and values with one ``struct`` unpack and a loop bounded by that threshold, so its Python
work per batch stays constant.

Both decoders give the same records for every batch and raise the same error for every bad
one (``tests/property/test_small_batches.py``). Use it through ``records.py``..
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import NamedTuple

from ._column_check import SCALAR_MAX_RECORDS
from ._many_batches import header_and_section
from ._record_check import MAX_UNCOMPRESSED_BYTES, SECTION_SIZES, check_section

__all__ = ["ROWS_MAX_RECORDS", "RecordRows", "decode_rows"]

# The largest batch worth decoding row-wise: where the column check stops running without
# numpy, by the measurements in ``_column_check.py``.
ROWS_MAX_RECORDS = SCALAR_MAX_RECORDS


class RecordRows(NamedTuple):
    """One batch's records: the i-th record is ``base_offset + i``, with ``create_times[i]``,
    ``keys[i]``, ``values[i]`` (bytes, or None for a null) and ``headers[i]`` (None or a tuple
    of (str, bytes) pairs; ``headers`` itself is None when no record has any)."""

    base_offset: int
    log_append_time: int
    create_times: tuple
    keys: list
    values: list
    headers: list | None


def decode_rows(batch, *, verify_crc: bool = True,
                max_uncompressed_bytes: int = MAX_UNCOMPRESSED_BYTES) -> RecordRows:
    """Decode one complete batch row-wise; for batches of at most ``ROWS_MAX_RECORDS``
    records (right at any count, but a loop per record beyond it).

    Raises:
        BatchFormatError: a bad header or CRC; CorruptRecordsError (a subclass) when the
            records section is inconsistent: exactly what ``decode_columns`` raises.
    """
    header, section = header_and_section(memoryview(batch).cast("B"), verify_crc,
                                         max_uncompressed_bytes)
    keys_bytes, values_bytes, headers = check_section(section, header)
    n = header.record_count
    columns = _layout(n).unpack_from(section, SECTION_SIZES.size)
    fixed = SECTION_SIZES.size + 16 * n
    blobs = bytes(section[fixed:fixed + keys_bytes + values_bytes])
    return RecordRows(header.base_offset, header.log_append_time, columns[:n],
                      _cut(blobs, 0, columns[n:2 * n]), _cut(blobs, keys_bytes, columns[2 * n:]),
                      None if headers is None else list(headers))


@lru_cache(maxsize=ROWS_MAX_RECORDS + 1)
def _layout(n: int) -> struct.Struct:
    """The create_time, key_length and value_length columns of an n-record section."""
    return struct.Struct(f"<{n}q{2 * n}i")


def _cut(blobs: bytes, position: int, lengths: tuple) -> list:
    """One bytes per length from ``position`` on, None for a null (-1); the lengths were
    checked against the blob's size by ``check_section``."""
    values = []
    for length in lengths:
        if length < 0:
            values.append(None)
        else:
            values.append(blobs[position:position + length])
            position += length
    return values
