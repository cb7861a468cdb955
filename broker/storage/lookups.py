"""Lookups by time (Kafka's ListOffsets): a collaborator ``PartitionLog`` holds, with the
per-segment search keys it keeps up to date.

Because LAT never decreases, segments are ordered by LAT too: a lookup by LAT bisects the
running maxima of the segments' last LAT (``time_maxima``), then the segment's time index.
CreateTime is not ordered, so the log keeps the running maximum of the segments' largest
CreateTime (non-decreasing) and bisects that to find the first segment that holds a record
at or after the target. Both bisections run in C over plain lists (no key function per
step), and a lookup on a sealed segment whose files were released opens what it needs
(``handles.py``).

Why a collaborator and not part of the log: the keys are pure bookkeeping over the segment
list, and the log's one job is to own that list. The log calls in here with its lock held
and hands over the list; nothing here takes a lock or keeps a segment.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Sequence

from tslog.protocol.batch_header import NO_TIMESTAMP

from .segment import NO_CREATE_TIME, Segment
from .types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, OffsetAndTimestamp

_bisect_left = bisect.bisect_left


def last_known_log_append_time(segments: Sequence[Segment]) -> int:
    """The LAT of the log's last batch (the active segment may be empty after a roll)."""
    return (segments[-2] if segments[-1].is_empty else segments[-1]).max_log_append_time


class TimeLookups:
    """The sorted search keys of one log's segments and the lookups that bisect them.

    ``base_offsets``, ``time_maxima`` and ``create_time_maxima`` have one entry per segment;
    the log updates the last entries on every append (O(1)), appends one per roll and
    ``rebuild``s them when segments leave (retention, truncation).

    ``newest_offset``: the first offset carrying the log's largest LogAppendTime (ListOffsets'
    MAX_TIMESTAMP), -1 while unknown. The log sets it when an append raises the largest
    time; otherwise it is found once by a lookup and kept, so a console asking every
    partition's latest time does not scan an index interval of headers per partition.
    """

    __slots__ = ("base_offsets", "time_maxima", "create_time_maxima", "handles", "bytes_read",
                 "newest_offset")

    def __init__(self, segments: Sequence[Segment], handles) -> None:
        self.handles = handles  # the log's LRU of open sealed segments
        self.bytes_read = 0  # log bytes read by time lookups since open
        self.rebuild(segments)

    def rebuild(self, segments: Sequence[Segment]) -> None:
        self.base_offsets = [segment.base_offset for segment in segments]
        self.time_maxima = list(itertools.accumulate(
            (s.max_log_append_time for s in segments), max, initial=NO_TIMESTAMP))[1:]
        self.create_time_maxima = list(itertools.accumulate(
            (s.max_create_time for s in segments), max, initial=NO_CREATE_TIME))[1:]
        self.newest_offset = -1  # found again on the next MAX_TIMESTAMP lookup

    def rolled(self, base_offset: int) -> None:
        """A new, empty segment at the end (never found first: it repeats the maxima)."""
        self.base_offsets.append(base_offset)
        self.time_maxima.append(self.time_maxima[-1])
        self.create_time_maxima.append(self.create_time_maxima[-1])

    def offset_for_time(self, segments: Sequence[Segment], timestamp: int,
                        timestamp_type: str) -> OffsetAndTimestamp | None:
        """See ``PartitionLog.offset_for_time`` (the caller holds its lock)."""
        if timestamp >= 0 and timestamp_type == "append":
            return self.by_log_append_time(segments, timestamp)
        if timestamp_type not in ("append", "create"):
            raise ValueError(f"timestamp type must be 'append' or 'create', not {timestamp_type!r}")
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(segments[-1].next_offset, NO_TIMESTAMP)
        if timestamp == EARLIEST_TIMESTAMP:
            return OffsetAndTimestamp(segments[0].base_offset, NO_TIMESTAMP)
        if timestamp == MAX_TIMESTAMP:
            if timestamp_type == "append":
                if segments[-1].is_empty and len(segments) == 1:
                    return None
                return self._newest(segments)
            if self.create_time_maxima[-1] == NO_CREATE_TIME:
                return None
            return self._by_create_time(segments, self.create_time_maxima[-1])
        if timestamp < 0:
            raise ValueError(f"unsupported special timestamp {timestamp}")
        if timestamp_type == "append":
            return self.by_log_append_time(segments, timestamp)
        return self._by_create_time(segments, timestamp)

    def _newest(self, segments: Sequence[Segment]) -> OffsetAndTimestamp | None:
        """MAX_TIMESTAMP by LogAppendTime: kept, or looked up once and kept."""
        if self.newest_offset >= 0:
            return OffsetAndTimestamp(self.newest_offset, self.time_maxima[-1])
        found = self.by_log_append_time(segments, last_known_log_append_time(segments))
        if found is not None:
            self.newest_offset = found.offset
        return found

    def by_log_append_time(self, segments: Sequence[Segment],
                           timestamp: int) -> OffsetAndTimestamp | None:
        """The first batch with LogAppendTime >= ``timestamp`` (>= 0), or None: ListOffsets'
        case, so ``_find_in_segment`` is written out here (one call less a lookup)."""
        i = _bisect_left(self.time_maxima, timestamp)
        if i == len(segments):
            return None
        segment = segments[i]
        self.handles.touch(segment)
        found = segment.find_by_log_append_time(timestamp)
        self.bytes_read += segment.last_scan_bytes
        return found

    def _by_create_time(self, segments, timestamp: int) -> OffsetAndTimestamp | None:
        found = self._find_in_segment(segments, self.create_time_maxima, timestamp,
                                      Segment.find_by_create_time)
        return OffsetAndTimestamp(*found) if found else None

    def _find_in_segment(self, segments, maxima: list, timestamp: int, find):
        """The first segment whose maximum time reaches ``timestamp`` (a bisect over the
        per-segment maxima), asked through its own index; None past the last segment."""
        i = bisect.bisect_left(maxima, timestamp)
        if i == len(segments):
            return None
        segment = segments[i]
        self.handles.touch(segment)
        found = find(segment, timestamp)
        self.bytes_read += segment.last_scan_bytes
        return found
