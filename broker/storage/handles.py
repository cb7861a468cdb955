"""``OpenSegments``: which sealed segments of one log hold open files, least recently read first.

Why: a segment holds up to four handles (its ``.log`` descriptor and three index maps, each
map with a descriptor of its own), so a partition of 500 segments kept every one open would
hold 2,000 (3,500 before sealed indexes dropped their second descriptor). Kafka maps its
indexes lazily and keeps them; tslog also lets them go. A sealed segment's summary (offsets,
times, sizes) stays in memory; its files are opened on the first read that needs them and
released when more than ``limit`` sealed segments of the log are open, least recently read
first. The active segment is never in here and never released.

Owner: one ``PartitionLog``; every call happens under that log's lock, like every read of a
segment, so a segment is never released while a read of it is under way. O(1) per call: an
``OrderedDict`` move, plus one release per segment opened beyond the limit.
"""

from __future__ import annotations

from collections import OrderedDict

OPEN_SEALED_SEGMENTS_MAX = 8  # per log: sealed segments with files open at once


class OpenSegments:
    """An LRU of the log's sealed segments that have files open. Not thread-safe (the log's
    lock serialises it)."""

    def __init__(self, limit: int = OPEN_SEALED_SEGMENTS_MAX) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, not {limit}")
        self.limit = limit
        self._open: OrderedDict = OrderedDict()
        self.opens = 0  # times a segment joined (first open or reopen), for benches and tests
        self.releases = 0

    def __len__(self) -> int:
        return len(self._open)

    def __contains__(self, segment) -> bool:
        return segment in self._open

    def opened(self, segment) -> None:
        """``segment`` opened a file: it becomes the most recent; the least recent beyond the
        limit release theirs (never ``segment`` itself)."""
        if segment in self._open:
            self._open.move_to_end(segment)
            return
        self._open[segment] = None
        self.opens += 1
        while len(self._open) > self.limit:
            oldest, _ = self._open.popitem(last=False)
            oldest.release()
            self.releases += 1

    def touch(self, segment) -> None:
        """A read used ``segment``: keep it open longest (nothing happens for the active one)."""
        if segment in self._open:
            self._open.move_to_end(segment)

    def discard(self, segment) -> None:
        """``segment`` left the log or became active: forget it without releasing."""
        self._open.pop(segment, None)

    def release_idle(self, keep: int = 0) -> int:
        """Release all but the ``keep`` most recently read; return how many were released."""
        released = 0
        while len(self._open) > keep:
            oldest, _ = self._open.popitem(last=False)
            oldest.release()
            released += 1
        self.releases += released
        return released
