"""Which sealed segments keep their files open, under a budget shared by every log of a broker.

Why: a sealed segment needs its ``.log`` descriptor and its three index maps to be read, and a
lookup that has to reopen them (open, map, close) costs ten times a lookup that finds them
open. Descriptors and maps are finite (``RLIMIT_NOFILE``, ``vm.max_map_count``), so they
cannot all stay open for every segment of every log either. An index map holds no descriptor
(``maps.py``), so an open sealed segment costs one descriptor and three maps.

``HandleBudget`` is the broker-wide budget: how many sealed segments' ``.log`` descriptors
and how many sealed index maps may stay open, split evenly among the open logs (each keeps
at least one sealed segment open), so a broker with one busy log keeps all of it open and a
broker with ten thousand logs keeps the total bounded. An operator sets it
(``storage_open_files_max``, ``storage_index_maps_max``); by default it is a quarter of the
process's open-file limit and of ``vm.max_map_count``, leaving the rest to active segments
(one descriptor and three maps each) and to connections. ``OpenSegments`` applies a log's
share: an LRU of its open sealed segments, least recently read released first.

Owner: one ``PartitionLog``; every call happens under that log's lock, like every read of a
segment, so a segment is never released while a read of it is under way, and a log only ever
releases its own segments. O(1) per call: an ``OrderedDict`` move, plus one release per
segment opened beyond the share.
"""

from __future__ import annotations

import resource
import threading
from collections import OrderedDict
from pathlib import Path

MAPS_PER_SEGMENT = 3  # a sealed segment's index maps: offset, time, create time
_MAX_MAP_COUNT = Path("/proc/sys/vm/max_map_count")


def default_open_files() -> int:
    """A quarter of the process's open-file limit (soft), at least 64."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(64, (soft if soft != resource.RLIM_INFINITY else 1 << 20) // 4)


def default_index_maps() -> int:
    """A quarter of the kernel's per-process map limit, at least 192."""
    try:
        limit = int(_MAX_MAP_COUNT.read_text())
    except (OSError, ValueError):
        limit = 65530  # Linux's default
    return max(192, limit // 4)


class HandleBudget:
    """Broker-wide limits on open sealed segments; logs ``join`` and ``leave`` it. Thread-safe
    (logs open in threads at start)."""

    def __init__(self, open_files: int | None = None, index_maps: int | None = None) -> None:
        self.open_files = open_files or default_open_files()
        self.index_maps = index_maps or default_index_maps()
        self.logs = 0
        self.per_log = self._share()
        self._lock = threading.Lock()

    def _share(self) -> int:
        segments = min(self.open_files, self.index_maps // MAPS_PER_SEGMENT)
        return max(1, segments // max(1, self.logs))

    def join(self) -> None:
        with self._lock:
            self.logs += 1
            self.per_log = self._share()

    def leave(self) -> None:
        with self._lock:
            self.logs = max(0, self.logs - 1)
            self.per_log = self._share()


_process_budget: HandleBudget | None = None


def process_budget() -> HandleBudget:
    """The budget of logs opened without one (a tool's, a test's): made on first use."""
    global _process_budget
    if _process_budget is None:
        _process_budget = HandleBudget()
    return _process_budget


class OpenSegments:
    """An LRU of the log's sealed segments that have files open, at most the log's share of
    the budget. Not thread-safe (the log's lock serialises it)."""

    def __init__(self, budget: HandleBudget | None = None) -> None:
        self.budget = budget or process_budget()
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
        while len(self._open) > self.budget.per_log:
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
