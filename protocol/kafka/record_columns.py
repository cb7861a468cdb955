"""Kafka's varint records, column-wise: the records section of a RecordBatch v2 <-> columns.

Why numpy and not a loop per record: every field of a Kafka record is a zigzag varint, but
when the columns are known (encoding) every varint's width, every record's size and position
follow from array arithmetic, so the whole section is one preallocated ``uint8`` array filled
by a handful of vectorised scatters (one per varint byte position, one per blob). Decoding
needs each record's start, which depends on the length varint before it: that one walk stays
a tight Python loop reading only the length varints (the per-record floor); every field
after that is read at known positions, field by field, for all records at once. Only the
records that carry headers go through a per-record path (headers are rare, and a header
list's layout is itself a chain of varints). Records of one shape (one key size, one value
size, no headers: most producers' batches) take a shorter path both ways, as the rows of a
2-D view (``same_layout``, ``same_layout_encode``), with the same bytes and the same errors.

Keys and values travel as (lengths, blob): ``int32`` lengths, -1 for null (tslog's stored
layout), and the present ones' bytes back to back.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .errors import KafkaBatchError
from .primitives import write_varlong
from .record_varints import record_length_at, record_uvarint
from .same_layout import Run, decode_runs, predicted_runs
from .same_layout_encode import layout_same
from .strided import (MAX_RUNS, ragged_index, run_views, stride_runs, strided_store,
                      uniform_runs)

_PAD = 10  # bytes past the end a varint read at a record's last byte may look at
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class RecordColumns(NamedTuple):
    """One Kafka batch's records as columns (see the module docstring for lengths/blobs)."""

    timestamp_deltas: np.ndarray  # int64[n]
    offset_deltas: np.ndarray  # int64[n]
    key_lengths: np.ndarray  # int32[n], -1: null
    keys: bytes
    value_lengths: np.ndarray  # int32[n], -1: null
    values: bytes
    headers: list | None  # None: no record has headers; else per record a list of pairs


# ----------------------------------------------------------------------------------- encoding


class _Varints(NamedTuple):
    """One column's zigzag codes, their byte counts and the widest count."""

    codes: np.ndarray  # uint64[n]
    sizes: np.ndarray  # int64[n]
    widest: int


# A zigzag code needs k bytes when it is below 2**(7k).
_THRESHOLD_LIST = [1 << (7 * k) for k in range(1, 10)]


def _zigzag(values: np.ndarray) -> _Varints:
    """The zigzag codes of int64 ``values`` and their byte counts. The counts come from one
    comparison per byte the widest code needs, not a search per value: columns here are
    mostly one or two bytes wide (lengths, offset deltas), where that is 2-3 cheap passes
    (a ``searchsorted`` against all nine thresholds measured dearer)."""
    values = values.astype(np.int64, copy=False)
    codes = ((values << 1) ^ (values >> 63)).view(np.uint64)
    top = int(codes.max()) if len(codes) else 0
    sizes = np.ones(len(codes), dtype=np.int64)
    widest = 1
    for threshold in _THRESHOLD_LIST:
        if top < threshold:
            break
        sizes += codes >= np.uint64(threshold)
        widest += 1
    return _Varints(codes, sizes, widest)


def _scatter_varints(out: np.ndarray, positions: np.ndarray, varints: _Varints,
                     max_runs: int = MAX_RUNS) -> None:
    """Write each varint's bytes at its position: one vectorised store per byte index (a
    single store when every value fits one byte, the common case of lengths and flags),
    strided when the positions fall in a few runs of one stride (``stride_runs``)."""
    codes, sizes = varints.codes, varints.sizes
    if varints.widest == 1:
        strided_store(out, positions, stride_runs(positions, max_runs), codes.astype(np.uint8))
        return
    if varints.widest == 2:
        # Both bytes stored for every value: a one-byte value's second byte is 0 and lands
        # on the next byte of its record, which is written after this (fields go in
        # order) or stays 0 (attributes, an empty header count). Every varint has at least
        # one byte of its record after it, so only two-byte columns take this path.
        small = codes.astype(np.uint16)
        runs = stride_runs(positions, max_runs)
        strided_store(out, positions, runs,
                      (small & 0x7F).astype(np.uint8) | ((small > 0x7F).astype(np.uint8) << 7))
        strided_store(out, positions, runs, (small >> 7).astype(np.uint8), 1)
        return
    continued = (sizes > 1).astype(np.uint8) << 7
    out[positions] = (codes & np.uint64(0x7F)).astype(np.uint8) | continued
    longer = np.flatnonzero(sizes > 1)
    shift = 7
    while longer.size:
        chunk = codes[longer] >> np.uint64(shift)
        index = shift // 7
        more = sizes[longer] > index + 1
        out[positions[longer] + index] = (chunk & np.uint64(0x7F)).astype(np.uint8) \
            | (more.astype(np.uint8) << 7)
        longer = longer[more]
        shift += 7


def _scatter_blob(out: np.ndarray, starts: np.ndarray, sizes: np.ndarray, blob, total: int,
                  max_runs: int = MAX_RUNS):
    """Copy the pieces of ``blob`` (back to back) to ``out`` at ``starts``."""
    source = np.frombuffer(blob, dtype=np.uint8, count=total)
    runs = uniform_runs(starts, sizes, max_runs)
    if runs is None:
        out[ragged_index(starts, sizes, total)] = source
        return
    for view, offset in run_views(out, runs):
        view[:] = source[offset:offset + view.size].reshape(view.shape)


def _header_bytes(pairs) -> bytes:
    """One record's header count and headers, Kafka's varint layout."""
    out = bytearray()
    write_varlong(out, len(pairs))
    for key, value in pairs:
        raw = key.encode("utf-8")
        write_varlong(out, len(raw))
        out += raw
        if value is None:
            out += b"\x01"
        else:
            write_varlong(out, len(value))
            out += value
    return bytes(out)


def encode_records(timestamp_deltas: np.ndarray, key_lengths: np.ndarray, keys,
                   value_lengths: np.ndarray, values, headers=None) -> bytes:
    """The records section of ``n`` records with offset deltas 0..n-1.

    ``headers``: None, or per record None / an empty list / a list of (str, bytes|None).
    """
    n = len(timestamp_deltas)
    out, _starts = layout_records(timestamp_deltas, np.arange(n, dtype=np.int64), key_lengths,
                                  keys, value_lengths, values, headers)
    return out.tobytes()


def layout_records(timestamp_deltas: np.ndarray, offset_deltas: np.ndarray,
                   key_lengths: np.ndarray, keys, value_lengths: np.ndarray, values,
                   headers=None, lead: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(``uint8`` array, int64 start of each record in it) of ``n`` records laid out back to
    back, each after ``lead[i]`` zero bytes (None: none). The lead is how the records of
    several batches are written at once: a batch header's room before each batch's first
    record (``record_batch.encode_many``), so one set of numpy calls serves a whole Fetch
    response instead of one set per batch. Headers as for ``encode_records``.
    """
    n = len(timestamp_deltas)
    key_lengths = np.asarray(key_lengths, dtype=np.int64)
    value_lengths = np.asarray(value_lengths, dtype=np.int64)
    key_sizes = np.maximum(key_lengths, 0)
    value_sizes = np.maximum(value_lengths, 0)
    header_sizes = np.ones(n, dtype=np.int64)  # a header count of 0 by default
    with_headers, header_blob = [], b""
    if headers is not None:
        with_headers = [i for i, pairs in enumerate(headers) if pairs]
        if with_headers:
            encoded = [_header_bytes(headers[i]) for i in with_headers]
            header_sizes[with_headers] = list(map(len, encoded))
            header_blob = b"".join(encoded)
    stamps = _zigzag(np.asarray(timestamp_deltas, dtype=np.int64))
    deltas = _zigzag(np.asarray(offset_deltas, dtype=np.int64))
    if not with_headers and n and (key_lengths == key_lengths[0]).all() \
            and (value_lengths == value_lengths[0]).all():
        laid = layout_same(stamps, deltas, int(key_lengths[0]), keys, int(value_lengths[0]),
                           values, lead)
        if laid is not None:
            return laid
    key_varints, value_varints = _zigzag(key_lengths), _zigzag(value_lengths)
    body = 1 + stamps.sizes + deltas.sizes + key_varints.sizes + key_sizes \
        + value_varints.sizes + value_sizes + header_sizes
    lengths = _zigzag(body)
    record = lengths.sizes + body
    ends = np.cumsum(record if lead is None else record + lead)
    starts = ends - record
    total = int(ends[-1])
    max_runs = MAX_RUNS if lead is None else MAX_RUNS + 4 * int(np.count_nonzero(lead))
    out = np.zeros(total, dtype=np.uint8)  # leads, attributes, empty header counts stay 0
    _scatter_varints(out, starts, lengths, max_runs)
    position = starts + lengths.sizes + 1
    _scatter_varints(out, position, stamps, max_runs)
    position += stamps.sizes
    _scatter_varints(out, position, deltas, max_runs)
    position += deltas.sizes
    _scatter_varints(out, position, key_varints, max_runs)
    position += key_varints.sizes
    key_total = int(key_sizes.sum())
    if key_total:
        _scatter_blob(out, position, key_sizes, keys, key_total, max_runs)
    position += key_sizes
    _scatter_varints(out, position, value_varints, max_runs)
    position += value_varints.sizes
    value_total = int(value_sizes.sum())
    if value_total:
        _scatter_blob(out, position, value_sizes, values, value_total, max_runs)
    position += value_sizes
    if with_headers:
        rows = np.array(with_headers, dtype=np.int64)
        sizes = header_sizes[rows]
        out[ragged_index(position[rows], sizes, len(header_blob))] = \
            np.frombuffer(header_blob, dtype=np.uint8)
    return out, starts


# ----------------------------------------------------------------------------------- decoding


_SPECULATION_MISSES = 8  # runs shorter than _SHORT_RUN before the walk goes record by record
_SHORT_RUN = 16
# Runs of one size worth trying as one layout each (``same_layout``): a producer's batch of
# fixed-size records is two (offset deltas of one byte, then of two), a few more when the
# timestamp deltas' widths change too; each run costs a dozen numpy calls.
_SAME_LAYOUT_RUNS = 6


def _same_size_run(data: np.ndarray, pos: int, total: int, prefix: int, left: int,
                   end: int) -> int:
    """How many records from ``pos`` on are each ``total`` bytes long, the first included:
    the records whose length varint is byte for byte the first's (its ``prefix`` bytes),
    read as ``prefix`` strided slices of the buffer (no index array), compared at once. A
    record's start depends only on the sizes before it, so a prefix of records that all say
    ``total`` is exactly what the walk one by one would find; a record that says it in
    other bytes (a varint padded with 0x80s) only ends the run, and the walk reads it."""
    count = min(left, (end - pos) // total)
    stop = pos + total * count
    same = data[pos:stop:total] == data[pos]
    for j in range(1, prefix):
        same &= data[pos + j:stop + j:total] == data[pos + j]
    if same.all():
        return count
    return int(same.argmin())


def _size_runs(buf: bytes, data: np.ndarray, count: int) -> tuple[list[Run], int]:
    """(runs of same-size records from the batch's first, the byte after the last): until
    every record is in one or after a few short runs (sizes that vary)."""
    end = len(buf)
    runs = []
    pos = done = misses = 0
    while done < count and misses < _SPECULATION_MISSES:
        size, body = record_length_at(buf, pos, end)
        total = body - pos + size
        run = _same_size_run(data, pos, total, body - pos, count - done, end)
        runs.append(Run(pos, total, body - pos, run))
        pos += total * run
        done += run
        misses += run < _SHORT_RUN
    return runs, pos


def _record_bounds(buf: bytes, runs: list[Run], pos: int, count: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(first byte after each record's length varint, each record's end).

    Where each record starts depends on the length varint of the one before, so this is a
    walk; but records of one size (fixed-size keys and values: only the offset delta's width
    varies) are found a run at a time by ``_same_size_run`` (``runs``, ending at ``pos``).
    After a few short runs the walk goes one record at a time in Python, reading nothing
    but the length varints: the floor of this design."""
    end = len(buf)
    firsts, stops = [], []
    for run in runs:
        starts = run.start + run.size * np.arange(run.count, dtype=np.int64)
        firsts.append(starts + run.prefix)
        stops.append(starts + run.size)
    done = sum(run.count for run in runs)
    if done < count:
        first_list, stop_list = [], []
        first_append, stop_append = first_list.append, stop_list.append
        for _ in range(count - done):
            size, pos = record_length_at(buf, pos, end)
            first_append(pos)
            pos += size
            stop_append(pos)
        firsts.append(np.array(first_list, dtype=np.int64))
        stops.append(np.array(stop_list, dtype=np.int64))
    if pos != end:
        raise KafkaBatchError(f"{end - pos} bytes after the batch's {count} records")
    return np.concatenate(firsts), np.concatenate(stops)


def _read_varints(data: np.ndarray, positions: np.ndarray, stops: np.ndarray):
    """(int64 zigzag-decoded values, widths) of the varints at ``positions``, all at once;
    ``data`` is padded so a read past a record's end lands in the buffer, and any varint
    that ends past its record's end is an error."""
    raw = data[positions]
    if int(raw.max()) < 0x80:  # every varint one byte (flags, small lengths and deltas)
        if (positions >= stops).any():
            raise KafkaBatchError("a varint runs past the end of its record")
        small = raw.astype(np.int64)
        return (small >> 1) ^ -(small & 1), np.ones(len(positions), dtype=np.int64)
    more = raw >= 0x80
    second = data[positions + 1]
    if not (more & (second >= 0x80)).any():  # at most two bytes each (lengths, deltas)
        widths = more.astype(np.int64) + 1
        if (positions + widths > stops).any():
            raise KafkaBatchError("a varint runs past the end of its record")
        small = (raw & 0x7F).astype(np.int64) | ((second.astype(np.int64) << 7) * more)
        return (small >> 1) ^ -(small & 1), widths
    codes = (raw & 0x7F).astype(np.uint64)
    widths = np.ones(len(positions), dtype=np.int64)
    longer = np.flatnonzero(raw & 0x80)
    index = 1
    while longer.size:
        if index == 10:
            raise KafkaBatchError("varint longer than 10 bytes in a record")
        raw = data[positions[longer] + index]
        if index == 9 and (raw > 1).any():
            raise KafkaBatchError("a record's varint does not fit 64 bits")
        codes[longer] |= (raw & 0x7F).astype(np.uint64) << np.uint64(7 * index)
        widths[longer] += 1
        longer = longer[(raw & 0x80) != 0]
        index += 1
    if (positions + widths > stops).any():
        raise KafkaBatchError("a varint runs past the end of its record")
    signed = (codes >> np.uint64(1)) ^ (np.uint64(0) - (codes & np.uint64(1)))
    return signed.view(np.int64), widths


def _gather(data: np.ndarray, positions: np.ndarray, lengths: np.ndarray) -> bytes:
    sizes = np.maximum(lengths, 0)
    total = int(sizes.sum())
    if not total:
        return b""
    runs = uniform_runs(positions, sizes)
    if runs is None:
        return data[ragged_index(positions, sizes, total)].tobytes()
    return b"".join(view.tobytes() for view, _offset in run_views(data, runs))


def _headers(buf: bytes, pos: int, stop: int, count: int) -> list:
    """One record's headers, which must end exactly at ``stop``."""
    if count < 0 or count > stop - pos:
        raise KafkaBatchError(f"record header count {count} does not fit")
    pairs = []
    for _header in range(count):
        raw, pos = record_uvarint(buf, pos, stop)
        length = (raw >> 1) ^ -(raw & 1)
        if length < 0 or pos + length > stop:
            raise KafkaBatchError("a record header key runs past the record")
        try:
            key = buf[pos:pos + length].decode("utf-8")
        except UnicodeDecodeError:
            raise KafkaBatchError("a record header key is not UTF-8") from None
        pos += length
        raw, pos = record_uvarint(buf, pos, stop)
        length = (raw >> 1) ^ -(raw & 1)
        if length < 0:
            pairs.append((key, None))
            continue
        if pos + length > stop:
            raise KafkaBatchError("a record header value runs past the record")
        pairs.append((key, buf[pos:pos + length]))
        pos += length
    if pos != stop:
        raise KafkaBatchError(f"record ends {stop - pos} bytes after its headers")
    return pairs


def _length_field(data, positions, stops):
    """A key or value length varint: (lengths, widths), refusing < -1 or past the record."""
    lengths, widths = _read_varints(data, positions, stops)
    if (lengths < -1).any() or (lengths > stops - positions - widths).any():
        raise KafkaBatchError("a record's key or value runs past the record")
    return lengths, widths


def decode_records(buf: bytes, count: int) -> RecordColumns:
    """The records section ``buf`` (uncompressed) of ``count`` records as columns.

    Raises ``KafkaBatchError`` for anything that is not exactly ``count`` well-formed records.
    """
    if count == 0:
        if len(buf):
            raise KafkaBatchError(f"{len(buf)} bytes after the batch's 0 records")
        empty = np.zeros(0, dtype=np.int64)
        return RecordColumns(empty, empty, empty.astype(np.int32), b"", empty.astype(np.int32),
                             b"", None)
    # The size runs and the one-shape path read only inside the records: no padded copy.
    view = np.frombuffer(buf, dtype=np.uint8)
    predicted = predicted_runs(buf, count)
    same = None if predicted is None else decode_runs(buf, view, predicted)
    runs, pos = ([], 0) if same is not None else _size_runs(buf, view, count)
    if same is None and pos == len(buf) and len(runs) <= _SAME_LAYOUT_RUNS \
            and sum(run.count for run in runs) == count:
        same = decode_runs(buf, view, runs)
    if same is not None:
        stamps, deltas, key_lengths, keys, value_lengths, values = same
        return RecordColumns(stamps, deltas, key_lengths, keys, value_lengths, values, None)
    buf = bytes(buf)
    data = np.frombuffer(buf + bytes(_PAD), dtype=np.uint8)
    firsts, stops = _record_bounds(buf, runs, pos, count)
    position = firsts + 1  # record attributes: unused by every Kafka version so far
    timestamp_deltas, widths = _read_varints(data, position, stops)
    position = position + widths
    offset_deltas, widths = _read_varints(data, position, stops)
    position += widths
    key_lengths, widths = _length_field(data, position, stops)
    position += widths
    keys = _gather(data, position, key_lengths)
    position += np.maximum(key_lengths, 0)
    value_lengths, widths = _length_field(data, position, stops)
    position += widths
    values = _gather(data, position, value_lengths)
    position += np.maximum(value_lengths, 0)
    header_counts, widths = _read_varints(data, position, stops)
    position += widths
    headers = None
    carrying = np.flatnonzero(header_counts)
    if carrying.size:
        headers = [[] for _ in range(count)]
        for row in carrying.tolist():
            headers[row] = _headers(buf, int(position[row]), int(stops[row]),
                                    int(header_counts[row]))
        plain = header_counts == 0
        if (position[plain] != stops[plain]).any():
            raise KafkaBatchError("a record ends after its fields")
    elif (position != stops).any():
        raise KafkaBatchError("a record ends after its fields")
    return RecordColumns(timestamp_deltas, offset_deltas, key_lengths.astype(np.int32), keys,
                         value_lengths.astype(np.int32), values, headers)
