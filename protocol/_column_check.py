"""The column checks of a records section: CreateTimes against the header, and the key and
value length columns against their blobs' sizes. Two ways to run them, one answer.

A batch of many records is checked with a few numpy reductions over ``frombuffer`` views
(``check_columns_vectorised``): constant Python work whatever the record count. But each
reduction has a fixed cost of its own, several times that of unpacking a handful of integers,
and a latency-sensitive producer (linger 0) sends batches of one record, where those fixed
costs were most of what a leader spent on an append. So a batch of at most
``SCALAR_MAX_RECORDS`` records is checked by ``check_columns_scalar`` instead: one
``struct`` unpack of its three columns into a tuple, then ``min``/``max``/``sum``/``count``
over it, all C-level builtins, no Python loop over records and no numpy call.

The threshold is where the two cost the same, measured two ways on batches of 1 to 1,024
records (100-byte values): by instructions executed (callgrind, start-up subtracted) the
scalar path stops being cheaper between 32 and 64 records (its cost grows by a Python int per
column per record, numpy's hardly at all); by time (``bench/column_check.py``, which prints the
crossover) between 128 and 256 on a busy machine. ``SCALAR_MAX_RECORDS = 32`` is below both,
so the scalar path runs only where it wins by either measure. Its per-record work (the unpack
and the C-level reductions) is bounded by that threshold, so the broker still does O(1) Python
work per batch.

Both paths accept and refuse exactly the same sections, with the same error and message
(``tests/property/test_column_check.py`` holds them together, on valid batches and on
mutated ones), so which one ran is never visible outside this module.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import numpy as np

from .errors import CorruptRecordsError

COLUMNS_START = struct.calcsize("<III")  # after keys_bytes, values_bytes, headers_bytes
NULL_LENGTH = struct.pack("<i", -1)
SCALAR_MAX_RECORDS = 32  # largest batch checked without numpy (module docstring)

# The create_time, key_length and value_length columns of an n-record section, in one call.
_COLUMNS = tuple(struct.Struct(f"<{n}q{2 * n}i") for n in range(SCALAR_MAX_RECORDS + 1))
_CREATE_TIMES_DISAGREE = "create times disagree with the batch header"


def check_columns(section, header, keys_bytes: int, values_bytes: int) -> None:
    """Raise CorruptRecordsError unless the section's columns agree with ``header`` and the
    blob sizes; the scalar path for small batches, numpy for the rest.

    ``section`` must already be known to hold the columns (``section_sizes`` checked it).
    """
    if header.record_count <= SCALAR_MAX_RECORDS:
        check_columns_scalar(section, header, keys_bytes, values_bytes)
    else:
        check_columns_vectorised(section, header, keys_bytes, values_bytes)


def check_columns_scalar(section, header, keys_bytes: int, values_bytes: int) -> None:
    """``check_columns`` by ``struct`` and C builtins. Right at any record count, but
    ``check_columns`` sends it only batches of up to ``SCALAR_MAX_RECORDS`` (a larger count
    costs a ``Struct`` of its own, and numpy wins there anyway)."""
    n = header.record_count
    layout = _COLUMNS[n] if n < len(_COLUMNS) else _columns_layout(n)
    columns = layout.unpack_from(section, COLUMNS_START)
    create_time = columns[:n]
    if (create_time[0] != header.first_create_time
            or min(create_time) != header.min_create_time
            or max(create_time) != header.max_create_time):
        raise CorruptRecordsError(_CREATE_TIMES_DISAGREE)
    _check_length_tuple(columns[n:2 * n], keys_bytes, "key")
    _check_length_tuple(columns[2 * n:], values_bytes, "value")


@lru_cache(maxsize=16)
def _columns_layout(n: int) -> struct.Struct:
    return struct.Struct(f"<{n}q{2 * n}i")


def _check_length_tuple(lengths: tuple, blob_bytes: int, what: str) -> None:
    """Every length is >= -1 and the non-negative ones add up to the blob's size."""
    lowest = min(lengths)
    total = sum(lengths)
    if lowest < 0:
        if lowest < -1:
            raise CorruptRecordsError(_negative_length(what))
        total += lengths.count(-1)  # a null adds no bytes, not -1
    if total != blob_bytes:
        raise CorruptRecordsError(_sizes_disagree(what, total, blob_bytes))


def check_columns_vectorised(section, header, keys_bytes: int, values_bytes: int) -> None:
    """``check_columns`` by numpy reductions over views of the section: constant Python
    work at any record count."""
    n = header.record_count
    create_time = np.frombuffer(section, "<i8", n, COLUMNS_START)
    if (create_time[0] != header.first_create_time
            or create_time.min() != header.min_create_time
            or create_time.max() != header.max_create_time):
        raise CorruptRecordsError(_CREATE_TIMES_DISAGREE)
    _check_length_column(section, COLUMNS_START + 8 * n, n, keys_bytes, "key")
    _check_length_column(section, COLUMNS_START + 12 * n, n, values_bytes, "value")


def _check_length_column(section, start: int, n: int, blob_bytes: int, what: str) -> None:
    """``_check_length_tuple`` over the int32 column at ``start``, in numpy."""
    if blob_bytes == 0 and section[start:start + 4 * n] == NULL_LENGTH * n:
        return  # e.g. a batch without keys
    lengths = np.frombuffer(section, "<i4", n, start)
    lowest = int(lengths.min())
    total = int(lengths.sum(dtype=np.int64))  # int64: a sum of hostile int32s cannot wrap
    if lowest < 0:
        if lowest < -1:
            raise CorruptRecordsError(_negative_length(what))
        total += int(np.count_nonzero(lengths < 0))  # a null adds no bytes, not -1
    if total != blob_bytes:
        raise CorruptRecordsError(_sizes_disagree(what, total, blob_bytes))


def _negative_length(what: str) -> str:
    return f"negative {what} length other than -1"


def _sizes_disagree(what: str, total: int, blob_bytes: int) -> str:
    return f"{what} lengths add up to {total} bytes, the {what} blob holds {blob_bytes}"
