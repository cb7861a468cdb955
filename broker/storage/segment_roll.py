"""Rolling a segment without waiting on the disk: the next segment's files made ahead, the
old segment sealed by the I/O worker.

Why: a roll used to seal the old segment on the event loop (per index: ``msync``, trim,
``fsync``, map again) and create four files and three maps for the new one: a stall
orders of magnitude longer than an ordinary append, every ``segment.bytes`` of produce. Now:

- **Ahead of the roll**, once the active segment is half full (by bytes or by index entries),
  the worker creates the next segment's files under temporary names (``next-segment.*.tmp``),
  preallocates the indexes and writes their first page, with no map (``SpareFiles``). At
  the roll the loop renames them to the new base offset and opens them: four renames, four
  opens and three maps, no file created and no first write through a map, which here waits
  milliseconds on ext4. A roll with no spare ready (a roll by time, or the worker behind) makes
  the files at once, as before.
- **After the roll**, the old segment keeps its writable maps (readers go on using them under
  the log's lock) until the worker's ``_seal`` marks them sealed under that lock and takes
  their descriptors (no syscall: an ``ftruncate`` there waited milliseconds for ext4's
  journal behind other fsyncs, and the loop with it), then trims the files outside it. The
  writable maps stay (``MmapIndex.seal_unsynced`` says why): reads stop at the entries.
- **Durable later, in bulk**: a sealed index matters at the next open only if it lies below
  the recovery point on disk, and only a checkpoint moves that point. So the fsyncs wait for
  the next checkpoint (or close), which syncs the indexes of every segment sealed since the
  last one (``sync_sealed``) and of every segment not sealed yet, before it writes the point:
  none is ever written past index entries that are not durable. Three fsyncs per roll, which
  kept the worker from keeping up with rolls every MiB on this disk, become a few per minute.

Crash safety: a crash between the roll and the seal leaves the old segment's indexes
untrimmed, exactly as a crash leaves the active segment's; the zero padding fails the sanity
checks at the next open and recovery rebuilds them from the log (``Segment.recover``). A
crash during the renames leaves temporary files, which opening removes, and at worst a
segment with missing index files, which recovery rebuilds. Leftover spares are ``.tmp``
files: ``recovery.list_segment_bases`` deletes them.

Truncation may make a rolled segment active again (``reactivate``): before its seal ran,
``make_active`` clears ``seal_pending`` under the log's lock and the seal does nothing; half
way, the trim owed is dropped under ``_trim_lock`` before the files grow again.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from . import files
from .background import INLINE
from .index import OffsetIndex, TimestampIndex
from .segment import Segment

SPARE_STEM = "next-segment"
_RELATIVE_OFFSET_MAX = 2**31 - 1
SEALS_OWED_MAX = 2  # each holds seven handles until sealed, three more than sealed
_INDEX_KINDS = ((files.OFFSET_INDEX_SUFFIX, OffsetIndex),
                (files.TIME_INDEX_SUFFIX, TimestampIndex),
                (files.CREATE_TIME_INDEX_SUFFIX, TimestampIndex))


def roll_reason(active: Segment, header, config) -> str | None:
    """Why the batch with ``header`` must start a new segment, or None. Decided from the
    log's contents alone (sizes, LATs, offsets; never the clock or how appends were
    grouped), so leader, follower and recovery cut segments at the same offsets."""
    size = active.size
    if not size:
        return None
    if size + header.batch_length > config.segment_bytes:
        return "size"
    if header.log_append_time - active.first_log_append_time > config.segment_ms:
        return "time"
    if active.offset_index.entries >= config.max_index_entries:
        return "index_full"
    if header.base_offset + header.last_offset_delta - active.base_offset > _RELATIVE_OFFSET_MAX:
        return "offset_overflow"
    return None


class SpareFiles:
    """The files of a segment not yet started: an empty log and three preallocated indexes
    whose first page is written. Made by the I/O worker, holding no descriptor (a log close
    to its roll would otherwise hold seven more); the loop renames them into place and opens
    them (``become``: four renames, four opens, three maps, no fault that waits)."""

    def __init__(self, directory: Path, capacity_bytes: int) -> None:
        self.directory = directory
        self.capacity_bytes = capacity_bytes
        self.log_path = self._temp(files.LOG_SUFFIX)
        try:
            self.log_path.unlink(missing_ok=True)
            os.close(os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644))
            for suffix, kind in _INDEX_KINDS:
                path = self._temp(suffix)
                path.unlink(missing_ok=True)
                kind.make_spare_file(path, capacity_bytes)
        except BaseException:
            self.discard()
            raise

    def _temp(self, suffix: str) -> Path:
        return self.directory / f"{SPARE_STEM}{suffix}{files.TEMP_SUFFIX}"

    def become(self, base_offset: int, index_interval_bytes: int) -> Segment:
        """Rename the files to ``base_offset``'s names and return the active segment over
        them (the log's file last: a crash midway leaves orphan indexes, which opening
        removes, rather than a log without its indexes)."""
        indexes = []
        for suffix, kind in _INDEX_KINDS:
            target = files.segment_file(self.directory, base_offset, suffix)
            os.rename(self._temp(suffix), target)
            indexes.append(kind(target, spare=True))
        log_path = files.segment_file(self.directory, base_offset, files.LOG_SUFFIX)
        os.rename(self.log_path, log_path)
        return Segment(self.directory, base_offset, index_interval_bytes,
                       opened=(os.open(log_path, os.O_RDWR), tuple(indexes)))

    def discard(self) -> None:
        """Remove the files (the log closed, or the index capacity changed)."""
        for suffix in files.SEGMENT_SUFFIXES:
            self._temp(suffix).unlink(missing_ok=True)


class SegmentRoller:
    """A log's roll machinery: its spare files and the seals it owes. A collaborator the log
    owns and hands what it needs (its directory, worker, locks and LRU of open segments)."""

    def __init__(self, directory: Path, worker, lock: threading.Lock,
                 checkpoint_lock: threading.Lock, handles) -> None:
        self.directory = directory
        self.worker = worker or INLINE
        self._lock = lock
        self._checkpoint_lock = checkpoint_lock
        self._handles = handles
        self._spare: SpareFiles | None = None  # set by the worker under the log's lock
        self._trim_lock = threading.Lock()  # taken alone, or inside the log's lock
        self._trims_owed: dict[Segment, list] = {}  # remapped read-only, files not trimmed
        self._unsynced: set[Segment] = set()  # sealed, index files not fsynced yet
        self._preparing = False
        self._seals_owed = 0  # _Seal commands submitted and not run yet
        self._closed = False

    # -- on the loop, under the log's lock -------------------------------------------------

    def prepare_if_due(self, active: Segment, segment_bytes: int, max_entries: int,
                       capacity_bytes: int) -> None:
        """Have the worker make the next segment's files once ``active`` is half full."""
        if self._preparing or not self.worker.asynchronous:
            return
        if active.size * 2 < segment_bytes and active.index_entries * 2 < max_entries:
            return
        self._preparing = True
        self.worker.submit(_PrepareSpare(self, capacity_bytes))

    def new_active(self, base_offset: int, index_interval_bytes: int,
                   capacity_bytes: int) -> Segment:
        """The next active segment: the spare renamed into place, or new files made now."""
        spare, self._spare = self._spare, None
        if spare is not None:
            self._preparing = False
            if spare.capacity_bytes == capacity_bytes:
                return spare.become(base_offset, index_interval_bytes)
            self.worker.submit(spare.discard)  # segment.index.bytes changed meanwhile
        segment = Segment(self.directory, base_offset, index_interval_bytes)
        segment.make_active(capacity_bytes)
        return segment

    def seal_later(self, segment: Segment, capacity_bytes: int) -> None:
        """Seal a rolled segment: in the worker (after making the next spare: a log that
        rolled once rolls again), or at once without one, or when ``SEALS_OWED_MAX`` are
        owed already (a disk slower than the rolls: the handles of owed seals stay bounded)."""
        if not self.worker.asynchronous or self._seals_owed >= SEALS_OWED_MAX:
            segment.seal()
            segment.track_handles(self._handles)
            return
        if not self._preparing:
            self._preparing = True
            self.worker.submit(_PrepareSpare(self, capacity_bytes))
        segment.seal_pending = True
        self._seals_owed += 1
        self.worker.submit(_Seal(self, segment))

    def reactivate(self, segment: Segment, capacity_bytes: int) -> None:
        """Make a rolled segment active again (a truncation cut into it). Its seal may be
        half done: the trim the worker still owes must not cut the files it now writes."""
        with self._trim_lock:
            _close_all(self._trims_owed.pop(segment, ()))
            self._unsynced.discard(segment)
            segment.make_active(capacity_bytes)

    def close(self, finish: bool = True) -> None:
        """The log is closing: drop the spare; the worker's seals become no-ops (closing
        seals the rest). ``finish``: trim what it still owes (then the caller runs
        ``sync_sealed``); False leaves the files as a crash would (``close_handles``)."""
        self._closed = True
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.discard()
        with self._trim_lock:
            for segment in list(self._trims_owed):
                owed = self._trims_owed.pop(segment)
                if finish:
                    _trim(owed)
                else:
                    _close_all(owed)

    # -- under the log's checkpoint lock (any thread) --------------------------------------

    def sync_sealed(self) -> None:
        """fsync the index files of the segments sealed since the last call: before a
        recovery point past them is written (checkpoint, close). A segment deleted
        meanwhile needs nothing; on failure they stay owed for the next call."""
        with self._lock:
            owed, self._unsynced = self._unsynced, set()
        try:
            for segment in owed:
                for index in segment.indexes:
                    try:
                        fd = os.open(index.path, os.O_RDONLY)
                    except FileNotFoundError:
                        continue
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
        except BaseException:
            with self._lock:
                self._unsynced |= owed
            raise

    # -- in the worker ---------------------------------------------------------------------

    def _make_spare(self, capacity_bytes: int) -> None:
        with self._lock:
            if self._closed:
                return
        try:
            spare = SpareFiles(self.directory, capacity_bytes)
        except FileNotFoundError:  # the log's directory went (topic deleted) meanwhile
            return
        with self._lock:
            if not self._closed:
                self._spare = spare
                return
        spare.discard()

    def _seal(self, segment: Segment) -> None:
        """Remap under the log's lock (microseconds: no syscall that waits on a disk), then
        trim outside it; the fsync waits for the next checkpoint (``sync_sealed``), which
        syncs every segment sealed since the last one at once, not three files per roll."""
        with self._lock:
            self._seals_owed -= 1
            if not segment.seal_pending or self._closed:
                return
            owed = segment.seal_unsynced()
            segment.track_handles(self._handles)
            self._unsynced.add(segment)
            with self._trim_lock:
                self._trims_owed[segment] = owed
        with self._checkpoint_lock, self._trim_lock:  # a checkpoint syncs the trimmed files
            _trim(self._trims_owed.pop(segment, ()))


def _trim(owed) -> None:
    """Cut sealed index files to their entries (``MmapIndex.seal_unsynced``'s debt)."""
    try:
        for fd, length in owed:
            os.ftruncate(fd, length)
    finally:
        _close_all(owed)


def _close_all(owed) -> None:
    for fd, _ in owed:
        os.close(fd)


@dataclass(frozen=True)
class _PrepareSpare:
    """Command: make the next segment's files for ``roller``'s log."""

    roller: SegmentRoller
    capacity_bytes: int

    def __call__(self) -> None:
        self.roller._make_spare(self.capacity_bytes)


@dataclass(frozen=True)
class _Seal:
    """Command: seal ``segment``, rolled by ``roller``'s log."""

    roller: SegmentRoller
    segment: Segment

    def __call__(self) -> None:
        self.roller._seal(self.segment)
