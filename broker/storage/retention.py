"""Retention (``retention.bytes``, then ``retention.ms``): which of a log's oldest segments
have expired. A plain function over the segments' public read-only surface; the log
(``PartitionLog.delete_old_segments``) takes them out of its list and deletes them.

Why it may run in another thread beside the log's owner: deleting a segment means unlinking
three or four files and releasing their descriptors and maps, which on a busy disk takes
milliseconds, and a broker must not stall every connection for that. So the segments leave
the log's list under its lock (readers hold the same lock while they use a segment, so none
can be half way through one), and are closed and unlinked after the lock is released, when
nothing can reach them any more.
"""

from __future__ import annotations

from typing import Callable, Sequence

from .config import LogConfig
from .segment import Segment


def expired_segments(segments: Sequence[Segment], config: LogConfig,
                     now_ms: Callable[[], int], limit: int,
                     log_start_offset: int = 0) -> tuple[list[str], bool]:
    """Why each of the oldest segments goes (one reason per segment, oldest first), and
    whether the active segment is among them (the caller then rolls a new empty one first,
    so an idle partition still expires and keeps its log end offset).

    ``limit``: no segment holding an offset at or past it goes (a replica's high watermark).
    ``log_start_offset``: segments wholly below it go first (records DeleteRecords deleted;
    ``start_offset.py``), the active one too when every record is below it.
    By size, the oldest segments go while the rest still exceeds retention.bytes; the active
    segment never goes. By time, a segment goes when now - its last LAT exceeds retention.ms.
    """
    reasons: list[str] = []
    i, count = 0, len(segments)
    roll_first = False
    while (i < count and not segments[i].is_empty
           and segments[i].next_offset <= min(log_start_offset, limit)):
        roll_first |= i == count - 1
        reasons.append("delete_records")
        i += 1
    if config.retention_bytes >= 0:
        total = sum(segment.size for segment in segments[i:])
        while (count - i > 1 and segments[i].next_offset <= limit
               and total - segments[i].size >= config.retention_bytes):
            total -= segments[i].size
            reasons.append("size")
            i += 1
    if config.retention_ms >= 0:
        now = now_ms()
        while (i < count and not segments[i].is_empty
               and now - segments[i].max_log_append_time > config.retention_ms
               and segments[i].next_offset <= limit):
            roll_first |= i == count - 1
            reasons.append("time")
            i += 1
    return reasons, roll_first
