"""Lookups by time (Kafka's ListOffsets), split out of ``log.py`` for size.

Because LAT never decreases, segments are ordered by LAT too: a lookup by LAT bisects the
log's running maxima of the segments' last LAT (``_time_maxima``), then the segment's time
index. CreateTime is not ordered, so the log keeps the running maximum of the segments'
largest CreateTime (non-decreasing) and bisects that to find the first segment that holds a
record at or after the target. Both bisections run in C over plain lists, and a lookup on a
sealed segment whose files were released opens what it needs (``handles.py``).
"""

from __future__ import annotations

import bisect

from tslog.protocol.batch_header import NO_TIMESTAMP

from .segment import NO_CREATE_TIME, Segment
from .types import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, OffsetAndTimestamp


class LookupMixin:
    """``PartitionLog``'s lookups by time (they use its lock, segments and search keys)."""

    def offset_for_time(self, timestamp: int, timestamp_type: str = "append") -> OffsetAndTimestamp | None:
        """Kafka's ListOffsets on this log.

        ``timestamp`` >= 0: the first record whose time (LogAppendTime for ``"append"``,
        CreateTime for ``"create"``) is >= it, or None. LATEST (-1): the log end offset.
        EARLIEST (-2): the log start offset. MAX_TIMESTAMP (-3): the first record carrying the
        largest time. Time values in the answers are the record's own time (-1 for -1/-2).
        """
        with self._lock:  # retention in another thread cannot close the segment under us
            return self._offset_for_time_locked(timestamp, timestamp_type)

    def _offset_for_time_locked(self, timestamp: int, timestamp_type: str) -> OffsetAndTimestamp | None:
        self._check_open()
        if timestamp_type not in ("append", "create"):
            raise ValueError(f"timestamp type must be 'append' or 'create', not {timestamp_type!r}")
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(self.log_end_offset, NO_TIMESTAMP)
        if timestamp == EARLIEST_TIMESTAMP:
            return OffsetAndTimestamp(self.log_start_offset, NO_TIMESTAMP)
        if timestamp == MAX_TIMESTAMP:
            if timestamp_type == "append":
                if self._segments[-1].is_empty and len(self._segments) == 1:
                    return None
                return self._find_by_log_append_time(self._last_known_log_append_time())
            if self._create_time_maxima[-1] == NO_CREATE_TIME:
                return None
            return self._find_by_create_time(self._create_time_maxima[-1])
        if timestamp < 0:
            raise ValueError(f"unsupported special timestamp {timestamp}")
        if timestamp_type == "append":
            return self._find_by_log_append_time(timestamp)
        return self._find_by_create_time(timestamp)

    def _last_known_log_append_time(self) -> int:
        segments = self._segments
        return (segments[-2] if segments[-1].is_empty else segments[-1]).max_log_append_time

    def _find_by_log_append_time(self, timestamp: int) -> OffsetAndTimestamp | None:
        return self._find_in_segment(self._time_maxima, timestamp,
                                     Segment.find_by_log_append_time)

    def _find_by_create_time(self, timestamp: int) -> OffsetAndTimestamp | None:
        found = self._find_in_segment(self._create_time_maxima, timestamp,
                                     Segment.find_by_create_time)
        return OffsetAndTimestamp(*found) if found else None

    def _find_in_segment(self, maxima: list, timestamp: int, find):
        """The first segment whose maximum time reaches ``timestamp`` (a bisect over the
        per-segment maxima), asked through its own index; None past the last segment."""
        i = bisect.bisect_left(maxima, timestamp)
        if i == len(self._segments):
            return None
        segment = self._segments[i]
        self._open_segments.touch(segment)
        found = find(segment, timestamp)
        self.lookup_bytes_read += segment.last_scan_bytes
        return found
