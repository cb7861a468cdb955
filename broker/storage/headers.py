"""The header of the batch holding an offset, read safely beside retention in a thread.

Why a function of its own: scrape-time metrics (consumer-group lag in seconds) need the
LogAppendTime of the record at a given offset, which is its batch's. That is one index
bisect and at most one index interval of headers, but it reads a segment's files, and
retention may take that segment out and close it from another thread. So the read holds
the log's lock, as ``PartitionLog.read`` does, and never decodes a record.
"""

from __future__ import annotations

import bisect
import operator

from tslog.protocol.batch_header import BatchHeader

from .errors import OffsetOutOfRangeError
from .log import PartitionLog

_BASE_OFFSET = operator.attrgetter("base_offset")


def header_at(plog: PartitionLog, offset: int) -> BatchHeader:
    """The header of the batch holding ``offset``.

    Raises:
        OffsetOutOfRangeError: ``offset`` is outside [log start, log end).
    """
    with plog._lock:  # retention in another thread cannot close the segment under us
        plog._check_open()
        segments = plog._segments
        i = bisect.bisect_right(segments, offset, key=_BASE_OFFSET) - 1
        position = segments[i].position_of(offset) if i >= 0 else None
        if position is None:
            raise OffsetOutOfRangeError(f"offset {offset} is not in {plog.directory.name}")
        return segments[i].read_header_at(position)
