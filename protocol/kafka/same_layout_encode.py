"""Kafka records of one key size and one value size, laid out as the rows of 2-D views.

Why: a Fetch answer is mostly batches of such records (a producer's fixed-size keys and
values), and there every record is the same bytes but for its timestamp and offset deltas,
its key and its value. Records whose delta varints are as wide as their neighbours' (all
of a batch's first 64, then the rest: offset deltas widen at 64 and 8192) are one
``(records, size)`` view of the output: a template row broadcast into it, then a column
store per delta byte and one strided copy each for the keys and the values. That is a dozen
numpy calls per run of such records, where the general layout (``record_columns``) makes
a strided store per field per run of one stride, each a slow narrow write through the whole
megabyte (about five times the work for nine batches of 1000 records of 100 bytes).

The caller (``record_columns.layout_records``) has checked that no record carries headers
and that every key and every value length is the same; this module gives up (None) when
the records' sizes need length varints of different widths or fall in too many runs, and the
general layout answers. Both give the same bytes (the property tests hold them together).
"""

from __future__ import annotations

import numpy as np

from .primitives import uvarint_width, write_varlong

MAX_RUNS = 256  # runs of one layout worth a dozen numpy calls each


def _varint(value: int) -> bytes:
    out = bytearray()
    write_varlong(out, value)
    return bytes(out)


def _store_varints(rows: np.ndarray, column: int, codes: np.ndarray, width: int) -> None:
    """Each row's varint of ``width`` bytes from its zigzag code, at ``column``."""
    if width == 1:
        rows[:, column] = codes
        return
    for index in range(width):
        chunk = (codes >> np.uint64(7 * index)) & np.uint64(0x7F)
        if index < width - 1:
            chunk |= np.uint64(0x80)
        rows[:, column + index] = chunk


def layout_same(stamps, deltas, key_length: int, keys, value_length: int, values,
                lead: np.ndarray | None):
    """(``uint8`` array, int64 record starts) as ``record_columns.layout_records`` lays
    them out, for records without headers whose keys are all ``key_length`` and values all
    ``value_length`` bytes (-1: null); ``stamps``/``deltas`` are their zigzag varints
    (codes, sizes, widest). None when this layout does not apply (module docstring)."""
    n = len(stamps.codes)
    key_size, value_size = max(key_length, 0), max(value_length, 0)
    key_varint, value_varint = _varint(key_length), _varint(value_length)
    fixed = 2 + len(key_varint) + key_size + len(value_varint) + value_size
    body = stamps.sizes + deltas.sizes + fixed  # attributes and header count: 2 bytes
    length_width = uvarint_width(int(body.max()) << 1)
    if uvarint_width(int(body.min()) << 1) != length_width:
        return None
    record = body + length_width
    ends = np.cumsum(record if lead is None else record + lead)
    starts = ends - record
    shape = stamps.sizes * 16 + deltas.sizes
    edges = shape[1:] != shape[:-1]
    if lead is not None:
        edges |= lead[1:] != 0
    breaks = np.flatnonzero(edges) + 1
    if len(breaks) >= MAX_RUNS:
        return None
    out = np.zeros(int(ends[-1]), dtype=np.uint8)  # leads stay 0 for the caller's headers
    key_bytes = np.frombuffer(keys, dtype=np.uint8, count=n * key_size) if key_size else None
    value_bytes = np.frombuffer(values, dtype=np.uint8, count=n * value_size) \
        if value_size else None
    bounds = [0, *breaks.tolist(), n]
    firsts = starts[bounds[:-1]].tolist()
    stamp_widths = stamps.sizes[bounds[:-1]].tolist()
    delta_widths = deltas.sizes[bounds[:-1]].tolist()
    for run in range(len(bounds) - 1):
        low, high = bounds[run], bounds[run + 1]
        stamp_width, delta_width = stamp_widths[run], delta_widths[run]
        size = fixed + stamp_width + delta_width + length_width
        template = bytearray(_varint(size - length_width))
        template += bytes(1 + stamp_width + delta_width)
        template += key_varint + bytes(key_size) + value_varint + bytes(value_size + 1)
        rows = out[firsts[run]:firsts[run] + size * (high - low)].reshape(high - low, size)
        rows[:] = np.frombuffer(template, dtype=np.uint8)
        column = length_width + 1
        _store_varints(rows, column, stamps.codes[low:high], stamp_width)
        column += stamp_width
        _store_varints(rows, column, deltas.codes[low:high], delta_width)
        column += delta_width + len(key_varint)
        if key_size:
            rows[:, column:column + key_size] = \
                key_bytes[low * key_size:high * key_size].reshape(high - low, key_size)
        column += key_size + len(value_varint)
        if value_size:
            rows[:, column:column + value_size] = \
                value_bytes[low * value_size:high * value_size].reshape(high - low, value_size)
    return out, starts
