"""Retention (``retention.bytes``, then ``retention.ms``), split out of ``log.py`` for size.

Why it may run in another thread beside the log's owner: deleting a segment means unlinking
three or four files and releasing their descriptors and maps, which on a busy disk takes
milliseconds, and a broker must not stall every connection for that. So the segments leave
the log's list under its lock (readers hold the same lock while they use a segment, so none
can be half way through one), and are closed and unlinked after the lock is released, when
nothing can reach them any more.
"""

from __future__ import annotations

from .types import DeletedSegment


class RetentionMixin:
    """``PartitionLog``'s retention methods (they use its lock, segments and clock)."""

    def delete_old_segments(self, keep_from: int | None = None) -> list[DeletedSegment]:
        """Apply retention.bytes then retention.ms; return what was deleted and why.

        ``keep_from``: no segment holding an offset at or past it goes (a replica passes its
        high watermark, so data not yet on every in-sync replica is never deleted, as in
        Kafka); None means the log end.

        By size, the oldest segments go while the rest still exceeds retention.bytes; the
        active segment never goes. By time, a segment goes when now - its last LAT exceeds
        retention.ms; if that includes the active segment, a new empty one is rolled first so
        an idle partition still expires and the log end offset is kept.

        May run in another thread beside the owner: segments leave the list under the lock,
        and are closed and unlinked (the slow part) after it is released.
        """
        self._check_open()
        deleted: list[DeletedSegment] = []
        retired: list = []
        config = self.config
        with self._lock:
            if self._closed:
                return deleted
            limit = self.log_end_offset if keep_from is None else keep_from
            if config.retention_bytes >= 0:
                total = self.size_bytes
                while (len(self._segments) > 1 and self._segments[0].next_offset <= limit
                       and total - self._segments[0].size >= config.retention_bytes):
                    total -= self._segments[0].size
                    deleted.append(self._retire_oldest_locked("size", retired))
            if config.retention_ms >= 0:
                now = self.clock.now_ms()
                while not self._segments[0].is_empty and (
                    now - self._segments[0].max_log_append_time > config.retention_ms
                ) and self._segments[0].next_offset <= limit:
                    if len(self._segments) == 1:
                        self._roll_locked("retention")
                    deleted.append(self._retire_oldest_locked("time", retired))
            if deleted:
                self._rebuild_search_keys()
        for segment in retired:
            segment.delete()
        if deleted:
            self.checkpoint()
        return deleted

    def _retire_oldest_locked(self, reason: str, retired: list) -> DeletedSegment:
        """Take the oldest segment out of the log; the caller deletes it after the lock."""
        segment = self._segments.pop(0)
        self._dirty.discard(segment)
        segment.untrack_handles()  # the LRU is the owner's: leave it here, under the lock
        retired.append(segment)
        return DeletedSegment(segment.base_offset, segment.next_offset, segment.size, reason)
