"""The reserved headers a mirrored record carries: where it came from on the source.

Every record the mirror writes gets three headers after the source record's own ones:

    tslog.mirror.partition   the source partition, 4 bytes big-endian signed
    tslog.mirror.offset      the source offset, 8 bytes big-endian signed
    tslog.mirror.lat         the source batch's LogAppendTime (epoch ms), 8 bytes big-endian

Why headers and not a side table: the target log itself then says how far the mirror got (its
last record names the next source offset to copy), so a restart needs no external state, and
any target record can be traced back. Fixed-width big-endian keeps them small and lets the
copy path cut them from one ``numpy`` buffer instead of formatting numbers per record.
"""

from __future__ import annotations

import struct

import numpy as np

PARTITION = "tslog.mirror.partition"
OFFSET = "tslog.mirror.offset"
LAT = "tslog.mirror.lat"
RESERVED = frozenset((PARTITION, OFFSET, LAT))

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


def offset_headers(partition: int, first_offset: int, count: int, lat: int) -> list:
    """The reserved headers of ``count`` records from ``first_offset`` on: one list each."""
    partition_pair = (PARTITION, _INT32.pack(partition))
    lat_pair = (LAT, _INT64.pack(lat))
    blob = np.arange(first_offset, first_offset + count, dtype=">i8").tobytes()
    return [[partition_pair, (OFFSET, blob[i:i + 8]), lat_pair] for i in range(0, 8 * count, 8)]


def source_of(headers) -> tuple[int, int, int] | None:
    """(source partition, offset, LAT) from a record's headers; None if it has none."""
    found = {name: value for name, value in headers if name in RESERVED}
    if len(found) != 3:
        return None
    return (_INT32.unpack(found[PARTITION])[0], _INT64.unpack(found[OFFSET])[0],
            _INT64.unpack(found[LAT])[0])


def without_reserved(headers) -> tuple:
    """A record's headers as the source had them: the reserved ones dropped."""
    return tuple((name, bytes(value)) for name, value in headers if name not in RESERVED)
