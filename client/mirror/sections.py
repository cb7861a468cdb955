"""Turning fetched source batches into the records section of one target batch.

Why not lists: handing the records to ``send_batch`` as Python lists cost Python work per
record (a list per record's headers, the producer's checks, msgpack walking every pair),
several times the rest of the copy. The fetched batch is already columns (``RecordColumns``),
and the target section is the same columns (``records.py``'s layout) plus four reserved
headers per record, so it is built with array operations per batch:

- CreateTimes: the source batch's LogAppendTime, repeated (``np.full``): the target's
  create-time index then holds the source LAT, which never decreases within a source
  partition, so "the first target record whose source LAT is >= T" is an exact lookup in
  that index (``source_time.py``); the record's own CreateTime moves into a header;
- key and value lengths: the source's columns cut at ``start`` (numpy);
- keys and values blobs: slices of the fetched batch's own buffers, not copied per record;
- headers: the reserved headers of one record encode to the same msgpack bytes for every
  record of a source batch except the 8 offset bytes and the 8 CreateTime bytes
  (``tslog.mirror.partition`` and ``.lat`` are the same across it), so a template entry is
  repeated and the offsets ``base_offset + start + i`` and the source CreateTimes are
  written into its two columns as big-endian arrays.

Only records that carry headers of their own cost Python work each (their own pairs are
re-encoded in front of the reserved ones); a source batch without headers costs none.

The bytes equal what ``build_batch`` makes of the same records with the reserved headers
appended and the source LAT as CreateTime (tests/unit/client/test_mirror_sections.py holds the two together), so the target
log is the same as before this path existed.
"""

from __future__ import annotations

from typing import NamedTuple

import msgpack
import numpy as np

from tslog.protocol.records import SECTION_SIZES, Section

from . import headers as reserved

_PAIR = b"\x92"  # a msgpack fixarray of 2: (name, value)


def _str(name: str) -> bytes:
    return msgpack.packb(name, use_bin_type=True)


def _bin(value: bytes) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def _array_header(count: int) -> bytes:
    """msgpack's header of an array of ``count`` items, in the form ``packb`` picks."""
    if count < 16:
        return bytes((0x90 | count,))
    if count < 1 << 16:
        return b"\xdc" + count.to_bytes(2, "big")
    return b"\xdd" + count.to_bytes(4, "big")


# The reserved pairs of one record, encoded: partition, offset, LAT, CreateTime pairs.
_OFFSET_PREFIX = _PAIR + _str(reserved.OFFSET) + b"\xc4\x08"
_LAT_PREFIX = _PAIR + _str(reserved.LAT) + b"\xc4\x08"
_CREATE_TIME_PREFIX = _PAIR + _str(reserved.CREATE_TIME) + b"\xc4\x08"
_RESERVED_COUNT = 4


def _template(partition: int, lat: int) -> tuple[bytes, int, int]:
    """The headers entry of a record of a source batch with no headers of its own (the
    fixarray of the reserved pairs, offset and CreateTime 0), and where its 8 offset bytes
    and its 8 CreateTime bytes sit."""
    head = bytes((0x90 | _RESERVED_COUNT,)) + _PAIR + _str(reserved.PARTITION)
    head += _bin(partition.to_bytes(4, "big", signed=True)) + _OFFSET_PREFIX
    entry = head + bytes(8) + _LAT_PREFIX + lat.to_bytes(8, "big", signed=True)
    entry += _CREATE_TIME_PREFIX
    return entry + bytes(8), len(head), len(entry)


def reserved_entry_bytes() -> int:
    """Bytes of one record's reserved headers entry (the same width for every record)."""
    return len(_template(0, 0)[0])


def _entries(partition: int, first_offset: int, create_times: np.ndarray,
             lat: int) -> tuple[bytearray, int]:
    """(one entry per record of equal width back to back, that width): entry i holds the
    reserved headers of source offset first_offset + i, CreateTime create_times[i]. The
    template is repeated by one bytearray multiplication and the offsets and CreateTimes
    written as two strided int64 columns."""
    template, offset_at, time_at = _template(partition, lat)
    width, count = len(template), len(create_times)
    entries = bytearray(template) * count
    columns = np.dtype({"names": ["offset", "time"], "formats": [">i8", ">i8"],
                        "offsets": [offset_at, time_at], "itemsize": width})
    view = np.frombuffer(entries, dtype=columns)
    view["offset"] = np.arange(first_offset, first_offset + count, dtype=np.int64)
    view["time"] = create_times
    return entries, width


def _lengths(offsets: np.ndarray, valid: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The int32 length column of records ``start`` to ``stop`` (-1 for a null field)."""
    lengths = np.diff(offsets[start:stop + 1]).astype("<i4")
    lengths[~valid[start:stop]] = -1
    return lengths


def _headers_blob(pieces: list, count: int) -> bytes:
    """The msgpack headers list of ``count`` entries from (entries, width, own headers)."""
    out = [_array_header(count)]
    for entries, width, own in pieces:
        if own is None or not any(own):
            out.append(entries)
            continue
        for index, pairs in enumerate(own):
            entry = entries[index * width:(index + 1) * width]
            if pairs:  # its own pairs first, then the reserved ones: a longer array
                packed = msgpack.packb([list(pair) for pair in pairs], use_bin_type=True)
                own_header = len(_array_header(len(pairs)))
                out.append(_array_header(len(pairs) + _RESERVED_COUNT) + packed[own_header:]
                           + entry[1:])
            else:
                out.append(entry)
    return b"".join(out)


class Slice(NamedTuple):
    """Records ``start`` to ``stop`` (exclusive) of a fetched ``ColumnBatch``."""

    batch: object
    start: int
    stop: int

    @property
    def count(self) -> int:
        return self.stop - self.start

    @property
    def data_bytes(self) -> int:
        """Key + value bytes of these records."""
        columns = self.batch.columns
        return int(columns.value_offsets[self.stop] - columns.value_offsets[self.start]
                   + columns.key_offsets[self.stop] - columns.key_offsets[self.start])


def build_section(slices, partition: int) -> Section:
    """The target section of ``slices`` (consecutive, of one source ``partition``),
    reserved headers added."""
    times, key_lengths, value_lengths, keys, values, pieces = [], [], [], [], [], []
    for batch, start, stop in slices:
        columns = batch.columns
        key_offsets, value_offsets = columns.key_offsets, columns.value_offsets
        times.append(np.full(stop - start, columns.log_append_time, dtype="<i8"))
        key_lengths.append(_lengths(key_offsets, columns.key_valid, start, stop))
        value_lengths.append(_lengths(value_offsets, columns.value_valid, start, stop))
        keys.append(columns.keys[int(key_offsets[start]):int(key_offsets[stop])])
        values.append(columns.values[int(value_offsets[start]):int(value_offsets[stop])])
        entries, width = _entries(partition, columns.base_offset + start,
                                  columns.create_time[start:stop], columns.log_append_time)
        own = None if columns.headers is None else columns.headers[start:stop]
        pieces.append((entries, width, own))
    time_column = np.concatenate(times)
    count = len(time_column)
    keys_blob = b"".join(keys)
    values_blob = b"".join(values)
    headers_blob = _headers_blob(pieces, count)
    sizes = SECTION_SIZES.pack(len(keys_blob), len(values_blob), len(headers_blob))
    parts = [sizes, time_column.tobytes(), np.concatenate(key_lengths).tobytes(),
             np.concatenate(value_lengths).tobytes(), keys_blob, values_blob, headers_blob]
    return Section(parts, count, int(time_column[0]), int(time_column.min()),
                   int(time_column.max()), True)
