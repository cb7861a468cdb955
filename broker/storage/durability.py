"""Making a partition log durable: ``flush``, ``checkpoint`` and the flush policy, a
collaborator ``PartitionLog`` holds (``log.py`` stays about owning the segment list).

Appends go to the page cache; ``flush`` fsyncs and advances the recovery point, either by
the flush policy (``flush.messages``, ``flush.ms``: queued to the I/O worker, so the append
does not wait for it), when the broker asks (group commit from a thread: ``flush`` is the
one method safe to call concurrently with the owner), or at each ``checkpoint``, which
flushes first, so the tail a crash leaves to recovery is at most one checkpoint interval old.

Threads: the state here (which segments are dirty, the recovery point, the policy's
counters) is guarded by the log's lock, which the log hands over at construction together
with its checkpoint lock (serialising the writers of the checkpoint file; always taken
before the log's lock, never inside it). The log itself is reached only through its public
read-only surface (``log_end_offset``, ``closed``, ``segments``, ``last_log_append_time``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from . import files, recovery
from .errors import LogClosedError
from .segment import Segment
from .segment_roll import SEALS_OWED_MAX, SegmentRoller


class LogDurability:
    """One log's dirty segments, recovery point and flush policy."""

    def __init__(self, plog, lock: threading.Lock, checkpoint_lock: threading.Lock,
                 roller: SegmentRoller, worker, recovery_point: int) -> None:
        self.log = plog
        self.directory: Path = plog.directory
        self._lock = lock
        self._checkpoint_lock = checkpoint_lock
        self._roller = roller
        self._worker = worker
        self.recovery_point = recovery_point
        self.dirty: set[Segment] = set()  # appended to since their last fdatasync
        self.directory_dirty = False  # a segment file was created or set aside since
        self._unflushed_records = 0
        self._last_flush_ms = plog.clock.now_ms()
        self._flush_queued = False  # the flush policy's flush waits in the worker
        self._cuts = 0  # truncations and resets so far: a flush that spans one moves nothing

    # -- on the owner's thread, under the log's lock ---------------------------------------

    def forget(self, segment: Segment) -> None:
        """``segment`` left the log (retention, truncation): nothing of it to sync."""
        self.dirty.discard(segment)

    def cut(self, active: Segment, log_end_offset: int, files_moved: bool) -> None:
        """The log was cut (or emptied) at ``log_end_offset``: the recovery point cannot be
        past it, and ``active``'s new size (and the names moved) must reach the disk."""
        self.recovery_point = min(self.recovery_point, log_end_offset)
        self._cuts += 1
        self.dirty.add(active)
        self.directory_dirty |= files_moved

    def restart_at(self, offset: int) -> None:
        """The log was emptied and goes on at ``offset`` (``PartitionLog.reset_to``)."""
        self.dirty.clear()
        self.directory_dirty = True
        self.recovery_point = offset
        self._cuts += 1

    # -- on the owner's thread, outside the lock -------------------------------------------

    def maybe_flush(self, records: int, now_ms: int) -> None:
        """The flush policy, after an append of ``records`` records."""
        self._unflushed_records += records
        config = self.log.config
        if (
            self._unflushed_records >= config.flush_messages
            or now_ms - self._last_flush_ms >= config.flush_ms
        ) and not self._flush_queued:
            if not self._worker.asynchronous:
                self.flush()
                return
            self._flush_queued = True
            self._worker.submit(self._policy_flush)

    def _policy_flush(self) -> None:
        """The flush policy's flush, in the worker (appends after it wait for the next)."""
        self._flush_queued = False
        with contextlib.suppress(LogClosedError):
            self.flush()

    # -- any thread ------------------------------------------------------------------------

    def flush(self) -> int:
        """Make everything appended so far durable; return the new recovery point.

        ``fdatasync``: the data and file size, not the timestamps nobody reads (measured
        cheaper than ``fsync`` here). A segment created or set aside since the last flush: its
        directory too, first: a truncation's renames must be durable before data appended
        after the cut is (``RemoveAndCheckpoint``).

        Safe to call from another thread while the owner appends: the segments to sync are
        taken under the lock, the syncs run outside it on duplicated descriptors.
        """
        plog = self.log
        with self._lock:
            if plog.closed:
                raise LogClosedError(f"{self.directory.name} is closed")
            target, cuts = plog.log_end_offset, self._cuts
            dirty = set(self.dirty)
            self.dirty.clear()
            directory_dirty, self.directory_dirty = self.directory_dirty, False
            self._unflushed_records = 0
            self._last_flush_ms = plog.clock.now_ms()
            descriptors = [segment.fileno_for_sync() for segment in dirty]
        try:
            if directory_dirty:
                files.fsync_directory(self.directory)
            for fd in descriptors:
                os.fdatasync(fd)
        except BaseException:
            with self._lock:
                self.dirty |= dirty
                self.directory_dirty |= directory_dirty
            raise
        finally:
            for fd in descriptors:
                os.close(fd)
        with self._lock:
            if cuts == self._cuts:  # else offsets up to ``target`` may be new, unsynced data
                self.recovery_point = max(self.recovery_point, target)
            return self.recovery_point

    def checkpoint(self) -> None:
        """Flush what is not yet durable, then persist the recovery point and the last LAT
        (an atomic write with two fsyncs).

        Before writing, the index files of the active and the recently rolled segments are
        synced too: recovery trusts the index entries below the point (``Segment.recover``).
        Safe from any thread beside the owner's appends: values are read under the lock, in
        the writers' own order, so a slower writer never puts back an older pair. Does
        nothing once the log is closed (``close`` writes the final one).
        """
        plog = self.log
        with self._lock:
            unflushed = not plog.closed and (self.dirty or self.directory_dirty)
        if unflushed:
            try:
                self.flush()
            except LogClosedError:
                return
        with self._checkpoint_lock:
            with self._lock:
                if plog.closed:
                    return
                recovery_point, last_time = self.recovery_point, plog.last_log_append_time
                descriptors = [fd for segment in plog.segments[-1 - SEALS_OWED_MAX:]
                               for fd in segment.index_filenos_for_sync()]
            try:
                for fd in descriptors:
                    os.fdatasync(fd)
            finally:
                for fd in descriptors:
                    os.close(fd)
            self._roller.sync_sealed()
            recovery.write_checkpoint(self.directory, recovery_point, last_time)


@dataclass(frozen=True)
class RemoveAndCheckpoint:
    """Command for the I/O worker after a truncation or a reset: unlink the files the loop
    set aside (``Segment.set_aside``), then checkpoint, which fsyncs the directory (the
    renames), the cut active segment, and writes the lowered recovery point and last LAT.

    Crash safety (what each crash point leaves, and why opening copes):

    - before the renames and the ``ftruncate`` reach the disk: the log as it was before the
      cut. The follower asks its leader's epochs again when it starts (KIP-101) and cuts
      again.
    - some of them there: the loop renames the segments last-first and cuts the active one
      after, so what reaches the disk (ext4 orders metadata operations in its journal) is
      the old log cut at some point at or past the target: again a log the follower cuts
      again. A flush fsyncs the directory before any data file, so data appended after the
      cut is never durable while a removed segment still holds its old name.
    - renamed, not unlinked: ``*.tmp`` files, which opening removes
      (``recovery.list_segment_bases``).
    - cut, checkpoint not written yet: the old checkpoint names a recovery point past the
      log end; opening then trusts the segments' own last LAT, not the checkpoint's (which
      was a batch that is gone, and would make the follower refuse the leader's batches).
    """

    log: object
    paths: tuple[Path, ...]

    def __call__(self) -> None:
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.log.checkpoint()  # a no-op once the log is closed (close checkpoints itself)
