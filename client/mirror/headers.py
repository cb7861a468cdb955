"""The reserved headers a mirrored record carries: where it came from on the source.

Every record the mirror writes gets four headers after the source record's own ones:

    tslog.mirror.partition    the source partition, 4 bytes big-endian signed
    tslog.mirror.offset       the source offset, 8 bytes big-endian signed
    tslog.mirror.lat          the source batch's LogAppendTime (epoch ms), 8 bytes big-endian
    tslog.mirror.create_time  the record's CreateTime on the source (epoch ms), 8 bytes

The target record's own CreateTime is the source LogAppendTime (``sections.py`` says why:
the target's create-time index then answers lookups by source time exactly), so the
producer's CreateTime travels in ``tslog.mirror.create_time``.

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
CREATE_TIME = "tslog.mirror.create_time"
RESERVED = frozenset((PARTITION, OFFSET, LAT, CREATE_TIME))

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


def offset_headers(partition: int, first_offset: int, count: int, lat: int,
                   create_times) -> list:
    """The reserved headers of ``count`` records from ``first_offset`` on, whose source
    CreateTimes are ``create_times``: one list each (the reference the copy path is tested
    against; it builds the same bytes from arrays)."""
    partition_pair = (PARTITION, _INT32.pack(partition))
    lat_pair = (LAT, _INT64.pack(lat))
    blob = np.arange(first_offset, first_offset + count, dtype=">i8").tobytes()
    return [[partition_pair, (OFFSET, blob[8 * i:8 * i + 8]), lat_pair,
             (CREATE_TIME, _INT64.pack(int(create_times[i])))] for i in range(count)]


def source_of(headers) -> tuple[int, int, int] | None:
    """(source partition, offset, LAT) from a record's headers; None if it has none."""
    found = {name: value for name, value in headers if name in RESERVED}
    if not {PARTITION, OFFSET, LAT} <= found.keys():
        return None
    return (_INT32.unpack(found[PARTITION])[0], _INT64.unpack(found[OFFSET])[0],
            _INT64.unpack(found[LAT])[0])


def create_time_of(record) -> int:
    """A mirrored record's CreateTime on the source (its ``tslog.mirror.create_time``
    header); the record's own CreateTime for a record copied before that header existed."""
    for name, value in record.headers:
        if name == CREATE_TIME:
            return _INT64.unpack(value)[0]
    return record.create_time


def without_reserved(headers) -> tuple:
    """A record's headers as the source had them: the reserved ones dropped."""
    return tuple((name, bytes(value)) for name, value in headers if name not in RESERVED)
