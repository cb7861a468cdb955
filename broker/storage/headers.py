"""Batch headers of a partition log, read safely beside retention in another thread.

Why functions of their own: scrape-time metrics (consumer-group lag in seconds) need the
LogAppendTime of the record at a given offset, which is its batch's; replication rebuilds
its producer state and leader epochs from the headers after a snapshot. Both read segment
files that retention may take out and close from another thread, so every read goes
through ``PartitionLog.read_segment`` (under the log's lock, never across a ``yield``), and
none decodes a record.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from typing import Iterator

from tslog.protocol.batch_header import BatchHeader

from .errors import OffsetOutOfRangeError
from .log import PartitionLog

_BASE_OFFSET = operator.attrgetter("base_offset")
_HEADERS_PER_LOCK = 4096  # how many headers one hold of the log's lock reads at most


def header_at(plog: PartitionLog, offset: int) -> BatchHeader:
    """The header of the batch holding ``offset``: one index bisect and at most one index
    interval of headers.

    Raises:
        OffsetOutOfRangeError: ``offset`` is outside [log start, log end).
        LogClosedError: the log is closed.
    """
    segments = plog.segments
    i = bisect.bisect_right(segments, offset, key=_BASE_OFFSET) - 1
    header = None
    if i >= 0:
        header = plog.read_segment(segments[i], lambda segment: _header_in(segment, offset))
    if header is None:  # past the end, or the segment was deleted meanwhile
        raise OffsetOutOfRangeError(f"offset {offset} is not in {plog.directory.name}")
    return header


def _header_in(segment, offset: int) -> BatchHeader | None:
    position = segment.position_of(offset)
    return None if position is None else segment.read_header_at(position)


def headers_from(plog: PartitionLog, from_offset: int) -> Iterator[BatchHeader]:
    """Headers of the batches holding offsets >= ``from_offset``, in order. Each segment
    is read in chunks; a segment deleted meanwhile ends its part of the scan."""
    for segment in plog.segments:
        if segment.next_offset <= from_offset or segment.is_empty:
            continue
        position = None  # found under the lock, with the first chunk
        while True:
            read = plog.read_segment(
                segment, lambda s, p=position: _chunk(s, p, from_offset))
            if read is None:
                break
            position, chunk = read
            for _, header in chunk:
                yield header
            if len(chunk) < _HEADERS_PER_LOCK:
                break


def _chunk(segment, position: int | None, from_offset: int) -> tuple[int, list]:
    """Up to ``_HEADERS_PER_LOCK`` (position, header) pairs from ``position`` (None: from
    the batch holding ``from_offset``), and where the next chunk starts."""
    if position is None:
        position = (segment.position_of(from_offset) if from_offset > segment.base_offset
                    else 0)
    chunk = list(itertools.islice(segment.scan_headers(position, segment.size),
                                  _HEADERS_PER_LOCK))
    if chunk:
        position = chunk[-1][0] + chunk[-1][1].batch_length
    return position, chunk
