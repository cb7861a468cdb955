"""PartitionLog: one topic-partition's log, the unit the broker appends to and reads from.

Theory of operation
-------------------
The log is a list of segments in offset order; the last is active. A leader append takes
batches checked by ``append_checks`` (header, CRC, size, CreateTime bounds), each with the
header the check parsed, stamps them with the next offsets and ``LAT = max(last LAT, now)``
and hands them to the active segment: a constant amount of Python per batch, whatever its
record count. A follower append takes the leader's bytes as they are, after the same
module's follower checks. Idempotence and the all-or-nothing rule of a request's batches
sit one level up, in ``replica.ReplicaLog.append_as_leader``.

Rolls are decided before an append from the log's contents alone: the active segment is
non-empty and the batch would push it past ``segment.bytes``; the incoming LAT is more than
``segment.ms`` past the segment's first LAT; the index is full; or the relative offset would
overflow int32. So leader, follower and recovery cut segments at the same offsets. A roll
swaps in files made ahead and leaves the seal to the I/O worker (``segment_roll.py``).

One owner: the log is the only object that reads or writes its segment list, locks and
counters. What it delegates are collaborators it builds and hands what they need: lookups by
time (``lookups.TimeLookups``), flush and checkpoint (``durability.LogDurability``), rolls
(``segment_roll.SegmentRoller``); retention's choice is a function over the segments
(``retention.expired_segments``). Other modules use the public methods below (``reset_to``,
``headers_from``, ``header_at``, ``sibling_files``); sealed segments stay open within budget.

Dormant: a broker's start makes each cleanly closed log dormant (``dormant=True``): it
holds its directory's name and config and opens nothing. The first use of its segments, by
any method, opens it (``__getattr__`` finds them missing and calls ``wake``), so a partition
nobody uses after a restart costs no descriptor, map or read; what metrics and retention ask
of it comes from its directory (``dormant.py``), and closing it writes nothing.

Durability: see ``durability.py``. Opening after a crash moves the recovery point to the log
end once recovery has validated and synced the tail (``recovery.py``). A follower's
truncation and reset change the log at once and leave unlinks and fsyncs to the I/O worker
(``durability.RemoveAndCheckpoint`` says what a crash in between leaves).
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from tslog.protocol.batch_header import HEADER_SIZE, NO_TIMESTAMP, BatchHeader, stamped

from . import append_checks, dir_lock, files, recovery
from .background import INLINE
from .clock import Clock, SystemClock
from .config import LogConfig
from .dormant import DormantFacts, may_expire, read_facts
from .durability import LogDurability, RemoveAndCheckpoint
from .errors import LogClosedError, NonContiguousOffsetError, OffsetOutOfRangeError
from .handles import HandleBudget, OpenSegments
from .lookups import TimeLookups, last_known_log_append_time
from .retention import expired_segments
from .segment import Segment
from .segment_roll import SegmentRoller, roll_reason
from .start_offset import StartOffset
from .types import AppendInfo, DeletedSegment, OffsetAndTimestamp

T = TypeVar("T")

log = logging.getLogger(__name__)

# What a dormant log sets when it is opened (``PartitionLog._load``); touching any of them
# before then opens it (``PartitionLog.__getattr__``).
_LOADED = frozenset({"_segments", "_last_log_append_time", "_start", "_roller", "_lookups",
                     "_durability", "_dirty"})


class PartitionLog:
    """A partition's segments. Owned by one caller (appends, rolls, truncation); ``flush``,
    ``checkpoint`` and ``delete_old_segments`` may run in another thread beside it.

    Threads: ``_lock`` guards the segment list and the counters. Appends, reads and lookups
    hold it while they use a segment, so retention (another thread) can only take a segment
    out of the list between them; it closes and unlinks the segment afterwards, outside the
    lock, when nothing can reach it any more. ``_checkpoint_lock`` serialises the writers of
    the checkpoint file and of the files beside it (``sibling_files``; taken before ``_lock``).
    """

    def __init__(self, directory: Path | str, config: LogConfig | None = None,
                 clock: Clock | None = None, worker=None, budget: HandleBudget | None = None,
                 defer_sync: bool = False, dormant: bool = False):
        """``worker``: the data directory's ``background.IOWorker`` (seals, the next segment's
        files, the flush policy's fsyncs, a truncation's unlinks and checkpoint); None: that
        work runs at once, on this thread. ``budget``: the broker's ``handles.HandleBudget``
        (None: the process's). ``defer_sync``: the caller makes the marker's removal and what
        recovery rewrote durable (one ``files.sync_filesystem`` for all logs) before any append.
        ``dormant``: the directory holds a cleanly closed log (the caller saw its marker):
        open nothing now; the first use of its segments opens it (``wake``)."""
        self.directory = Path(directory)
        self.config = config or LogConfig()
        self.clock = clock or SystemClock()
        # Before anything is read or recovered: one process per data directory (dir_lock).
        self._directory_lock: str | None = dir_lock.acquire(self.directory.parent)
        self._open_segments = OpenSegments(budget)
        self._open_segments.budget.join()
        self._lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()
        self._wake_lock = threading.Lock()  # a dormant log opens once, whoever uses it first
        self._closed = False
        self._worker = worker or INLINE
        self._facts: DormantFacts | None = None  # a dormant log's, read on demand (dormant.py)
        # Log bytes read by time lookups since open (a metric of how well indexes serve).
        # Read-only for others; a plain attribute, as ListOffsets reads it twice a lookup.
        self.lookup_bytes_read = 0
        self.roll_reasons: dict[str, int] = {}
        self.dormant = dormant
        # Its marker's removal is not durable yet: a dormant log's, once it wakes; the first
        # write makes it so (``_check_writable``), a read never needs it.
        self._marker_unsynced = dormant
        if dormant:  # what the clean close left stays as it is until the first use
            self.recovery_report = recovery.RecoveryReport(clean_shutdown=True)
            return
        try:
            self._load(defer_sync)
        except BaseException:
            self._let_go()
            raise

    def _load(self, defer_sync: bool, sync_marker: bool = True) -> None:
        """Open the segments (recovering them after a crash) and what reads and writes them.
        Sets every name in ``_LOADED`` at once, at the end: another thread waking the log
        meanwhile finds none of them (and waits for this) rather than some. ``sync_marker``
        False: the marker's removal is left to ``_check_writable`` (a woken log)."""
        files.ensure_directory(self.directory)
        segments, last_time, report = recovery.open_segments(
            self.directory, self.config.index_interval_bytes, self.config.segment_index_bytes,
            defer_sync)
        roller = SegmentRoller(self.directory, self._worker, self._lock, self._checkpoint_lock,
                               self._open_segments)
        for segment in segments[:-1]:
            segment.track_handles(self._open_segments)
        durability = LogDurability(self, self._lock, self._checkpoint_lock, roller,
                                   self._worker, segments[-1].next_offset)
        if report.clean_shutdown:  # from here on a crash is not a clean stop
            os.unlink(os.path.join(self.directory, files.CLEAN_SHUTDOWN_FILE))
            if sync_marker and not defer_sync:
                files.fsync_directory(self.directory)
        self.__dict__.update(
            _segments=segments, _last_log_append_time=last_time, recovery_report=report,
            _start=StartOffset(self.directory),  # where DeleteRecords started the log
            _roller=roller, _lookups=TimeLookups(segments, self._open_segments),
            _durability=durability,
            _dirty=durability.dirty)  # the same set: one add per append, no call

    def __getattr__(self, name: str):
        """Called only for a name not set: a dormant log's segments and what goes with them
        (``_LOADED``). Their first use opens the log, so every method works on a dormant log
        as on an open one, and an open log pays nothing for it."""
        if name in _LOADED and self.__dict__.get("dormant"):
            self.wake()
            return getattr(self, name)
        raise AttributeError(f"'PartitionLog' object has no attribute {name!r}")

    def wake(self) -> None:
        """Open a dormant log now: load its segments as after a clean stop and remove its
        clean-shutdown marker, whose removal the first write makes durable before it writes
        (``_check_writable``: a sweep of lookups over ten thousand logs makes no fsync).
        Thread-safe: the first caller opens it, the others wait for that. Raises
        LogClosedError once closed, OSError if the files cannot be opened (the log stays
        dormant: a later use retries)."""
        with self._wake_lock:
            if not self.dormant:
                return
            self._check_open()
            self._load(defer_sync=False, sync_marker=False)
            self._facts = None
            self.dormant = False

    def facts(self) -> DormantFacts | None:
        """A dormant log's start and end offsets, sizes and oldest LAT, read from its
        directory once (``dormant.py``); None for an open log, or if they cannot be read."""
        facts = self._facts
        if facts is None and self.dormant:
            facts = self._facts = read_facts(str(self.directory))
        return facts

    # -- state -----------------------------------------------------------------------------

    @property
    def active_segment(self) -> Segment:
        return self._segments[-1]

    @property
    def segments(self) -> tuple[Segment, ...]:
        """A snapshot of the segment list (the log may change it right after)."""
        return tuple(self._segments)

    @property
    def log_start_offset(self) -> int:
        """max(first base, min(DeleteRecords' start, end)), by comparisons: min/max parse keywords."""
        start, end, base = self._start.offset, self._segments[-1].next_offset, self._segments[0].base_offset
        start = start if start < end else end
        return start if start > base else base

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def last_log_append_time(self) -> int:
        return self._last_log_append_time

    @property
    def recovery_point(self) -> int:
        return self._durability.recovery_point

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def worker(self):
        """The I/O worker this log's disk commands go to. Files kept beside the log
        (replication's leader epochs) are written through it too, so their writes are
        ordered with the log's own (a truncation's unlinks and checkpoint)."""
        return self._worker

    @property
    def size_bytes(self) -> int:
        """The segments' bytes (a dormant log's from its directory, if it can tell)."""
        facts = self.facts()
        if facts is not None:
            return facts.size_bytes
        return sum(segment.size for segment in self._segments)

    def index_bytes(self) -> dict[str, int]:
        """Bytes of index entries per kind: offset, time and create-time."""
        facts = self.facts()
        if facts is not None:
            return dict(facts.index_bytes)
        sizes = [[index.size_bytes for index in segment.indexes] for segment in self._segments]
        return dict(zip(("offset", "time", "create_time"), map(sum, zip(*sizes))))

    # -- appending -------------------------------------------------------------------------

    def append(self, batch, leader_epoch: int = 0) -> AppendInfo:
        """Leader append of one batch (``append_checks.for_leader``, ``append_checked``); a
        broker appends through ``ReplicaLog.append_as_leader``. Nothing is written on error."""
        now = self.clock.now_ms()
        header = self.append_checked((append_checks.for_leader(self.config, batch, now),),
                                     leader_epoch, now)[1]
        return AppendInfo(header.base_offset, header.last_offset, header.log_append_time,
                          header.batch_length)

    def append_checked(self, checked, leader_epoch: int, now_ms: int) -> tuple[BatchHeader, BatchHeader]:
        """Leader append of ``CheckedBatch``es (``append_checks``), all or nothing, under
        one hold of the lock: each gets the next offset, ``leader_epoch`` and LAT = max(last
        LAT, ``now_ms``), the same LAT for all. Returns the first and last stamped headers
        (the check's, stamped: never parsed again). An I/O error's partial write is cut."""
        self._check_writable()
        log_append_time = max(self._last_log_append_time, now_ms)
        first = header = start = None
        records = 0
        try:
            with self._lock:
                start = self._segments[-1].next_offset
                for data, header, records_crc in checked:
                    header_bytes, header = stamped(data, header, self._segments[-1].next_offset,
                                                   leader_epoch, log_append_time, records_crc)
                    with memoryview(data) as view, view[HEADER_SIZE:] as body:
                        self._append_locked((header_bytes, body), header)
                    first = first or header
                    records += header.record_count
        except BaseException:
            if start is not None and self.log_end_offset != start:  # only I/O gets here
                self.truncate_to(start)
            raise
        self._durability.maybe_flush(records, now_ms)
        return first, header

    def append_as_follower(self, batch: bytes | bytearray) -> BatchHeader:
        """Follower append: the leader's bytes as they are, after checking them and their
        order. Returns the header the check parsed (what a replica learns epochs from)."""
        self._check_writable()
        header = append_checks.for_follower(self.config, batch)
        if header.base_offset != self.log_end_offset:
            raise NonContiguousOffsetError(f"batch starts at offset {header.base_offset}, "
                                           f"log ends at {self.log_end_offset}")
        if header.log_append_time < max(self._last_log_append_time, 0):
            raise NonContiguousOffsetError(f"batch LogAppendTime {header.log_append_time} is "
                                           f"before the log's last {self._last_log_append_time}")
        with self._lock:
            self._append_locked((batch,), header)
        self._durability.maybe_flush(header.record_count, self.clock.now_ms())
        return header

    def _append_locked(self, parts, header: BatchHeader) -> None:
        reason = roll_reason(self._segments[-1], header, self.config)
        if reason:
            self._roll_locked(reason)
        active = self._segments[-1]
        active.append(parts, header)
        config = self.config
        self._roller.prepare_if_due(active, config.segment_bytes, config.max_index_entries,
                                    config.segment_index_bytes)
        self._last_log_append_time = header.log_append_time
        self._dirty.add(active)
        keys = self._lookups
        if header.log_append_time > keys.time_maxima[-1]:  # the first batch at the new maximum
            keys.newest_offset = header.base_offset
        elif header.log_append_time < keys.time_maxima[-1]:  # never by the broker's clock
            keys.newest_offset = -1
        keys.time_maxima[-1] = header.log_append_time
        if active.max_create_time > keys.create_time_maxima[-1]:
            keys.create_time_maxima[-1] = active.max_create_time

    def roll(self) -> bool:
        """Start a new segment at the log end unless the active one is empty."""
        self._check_writable()
        with self._lock:
            if self.active_segment.is_empty:
                return False
            self._roll_locked("requested")
            return True

    def _roll_locked(self, reason: str) -> None:
        old = self._segments[-1]
        segment = self._roller.new_active(old.next_offset, self.config.index_interval_bytes,
                                          self.config.segment_index_bytes)
        self._roller.seal_later(old, self.config.segment_index_bytes)
        self._segments.append(segment)
        self._durability.directory_dirty = True
        self._lookups.rolled(segment.base_offset)
        self.roll_reasons[reason] = self.roll_reasons.get(reason, 0) + 1

    # -- durability (``durability.py``) ----------------------------------------------------

    def flush(self) -> int:
        """Make everything appended so far durable; return the new recovery point. Safe to
        call from another thread beside the owner's appends (``durability.py``)."""
        return self._durability.flush()

    def checkpoint(self) -> None:
        """Flush, then persist the recovery point and the last LAT; safe from any thread,
        a no-op once closed or while dormant (nothing changed since its clean close)."""
        if not self.dormant:
            self._durability.checkpoint()

    @contextlib.contextmanager
    def sibling_files(self) -> Iterator[bool]:
        """Hold while writing a file kept beside the segments (leader epochs, producer
        snapshot, high watermark): serialised with checkpoints and deletion. Yields False
        once closed: write nothing then, the directory may be gone or renamed aside."""
        with self._checkpoint_lock:
            yield not self._closed

    # -- reading ---------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int = 1 << 20, max_offset: int | None = None) -> bytes:
        """Stored batches from the one holding ``offset``: whole batches up to ``max_bytes``
        (at least one), never at or past ``max_offset`` (e.g. the high watermark).

        Returns b"" at the end. Raises OffsetOutOfRangeError outside [log start, log end].
        """
        with self._lock:  # retention in another thread cannot close the segment under us
            if self._closed:  # ``_check_open``, inline on every Fetch's path
                raise LogClosedError(f"{self.directory.name} is closed")
            # The ends read once each, straight from the segments (no property calls): this
            # is every Fetch's path.
            segments = self._segments
            log_end = segments[-1].next_offset
            end_offset = log_end if max_offset is None or max_offset > log_end else max_offset
            if offset > log_end or offset < self._start.offset or offset < segments[0].base_offset:
                start = self.log_start_offset
                if offset < start or offset > log_end:
                    raise OffsetOutOfRangeError(f"offset {offset} outside [{start}, {log_end}]")
            if offset >= end_offset:
                return b""
            segment = segments[bisect.bisect_right(self._lookups.base_offsets, offset) - 1]
            if offset >= segment.next_offset:  # only for an empty active segment
                return b""
            self._open_segments.touch(segment)
            position = segment.position_of(offset)
            end_position = segment.size
            if end_offset < segment.next_offset:
                end_position = segment.position_of(end_offset)
            return segment.read(position, max_bytes, end_position)

    def offset_for_time(self, timestamp: int, timestamp_type: str = "append") -> OffsetAndTimestamp | None:
        """Kafka's ListOffsets on this log (``lookups.py``).

        ``timestamp`` >= 0: the first record whose time (LogAppendTime for ``"append"``,
        CreateTime for ``"create"``) is >= it, or None. LATEST (-1): the log end offset.
        EARLIEST (-2): the log start offset. MAX_TIMESTAMP (-3): the first record carrying the
        largest time. Time values in the answers are the record's own time (-1 for -1/-2)."""
        lock = self._lock  # retention in another thread cannot close the segment under us;
        lock.acquire()  # acquire/release: a ``with`` costs as much again as the two calls
        try:
            if self._closed:  # ``_check_open``, inline on every lookup's path
                raise LogClosedError(f"{self.directory.name} is closed")
            lookups = self._lookups
            if timestamp >= 0 and timestamp_type == "append":  # ListOffsets' case, first
                found = lookups.by_log_append_time(self._segments, timestamp)
            else:
                found = lookups.offset_for_time(self._segments, timestamp, timestamp_type)
            self.lookup_bytes_read = lookups.bytes_read
            if found is None or found[0] >= self._start.offset:  # hence >= log_start_offset
                return found
            return found._replace(offset=max(found.offset, self.log_start_offset))  # DeleteRecords
        finally:
            lock.release()

    def read_segment(self, segment: Segment, read: Callable[[Segment], T]) -> T | None:
        """``read(segment)`` under the lock, or None once ``segment`` has left the log: how
        code outside the log reads a segment's files (``headers.py``), since retention may
        close them from another thread. Raises LogClosedError once the log is closed."""
        with self._lock:
            self._check_open()
            if segment not in self._segments:  # identity checks in C, a few per call
                return None
            return read(segment)

    # -- retention, truncation, reset -------------------------------------------------------

    def delete_old_segments(self, keep_from: int | None = None) -> list[DeletedSegment]:
        """Apply retention.bytes then retention.ms (``retention.expired_segments``); return
        what was deleted and why. ``keep_from``: no segment holding an offset at or past it
        goes (a replica passes its high watermark); None means the log end.

        May run in another thread beside the owner: segments leave the list under the lock,
        and are closed and unlinked (the slow part) after it is released.
        """
        self._check_open()
        deleted: list[DeletedSegment] = []
        retired: list[Segment] = []
        if self.dormant:  # opened only when something may have expired
            if not may_expire(self.facts(), self.config, self.clock.now_ms()):
                return deleted
            self.wake()
        with self._lock:
            if self._closed:
                return deleted
            limit = self.log_end_offset if keep_from is None else keep_from
            reasons, roll_first = expired_segments(self._segments, self.config, self.clock.now_ms,
                                                   limit, self.log_start_offset)
            if reasons and self._marker_unsynced:  # a write: see ``_check_writable``
                self._sync_marker_removal()
            if roll_first:
                self._roll_locked("retention")
            for reason in reasons:
                segment = self._segments.pop(0)
                self._durability.forget(segment)
                segment.untrack_handles()  # the LRU is the owner's: leave it here, under the lock
                retired.append(segment)
                deleted.append(DeletedSegment(segment.base_offset, segment.next_offset,
                                              segment.size, reason))
            if deleted:
                self._lookups.rebuild(self._segments)
        for segment in retired:
            segment.delete()
        if deleted:
            self.checkpoint()
        return deleted

    def delete_records_before(self, offset: int) -> int:
        """Kafka's DeleteRecords (``start_offset.py``): the log starts at ``offset``, durably
        before this returns; whole segments below it go. Returns the log start offset."""
        with self.sibling_files() as still_open:  # closed: nothing written, LogClosedError
            if still_open:
                self._start.advance(offset, self.log_start_offset, self.log_end_offset)
        self.delete_old_segments(keep_from=offset)
        return self.log_start_offset

    def truncate_to(self, offset: int) -> int:
        """Remove every record at or after ``offset`` (a batch boundary); return bytes removed.

        For a follower whose log diverged from its new leader: the last LAT becomes the last
        remaining batch's, so the new leader's batches (stamped after that) are accepted.
        The list, the active segment's size (an ``ftruncate``: the next append writes at the
        cut) and the removed files' names change now; unlinks and fsyncs go to the I/O worker
        (``durability.RemoveAndCheckpoint`` says what a crash in between leaves).
        """
        self._check_writable()
        if offset >= self.log_end_offset:
            return 0
        if offset < self.log_start_offset:
            raise OffsetOutOfRangeError(f"cannot truncate below the log start {self.log_start_offset}")
        removed = 0
        moved: list = []
        with self._lock:
            while len(self._segments) > 1 and self._segments[-1].base_offset > offset:
                segment = self._segments.pop()  # the last first: the disk sees prefixes
                removed += segment.size
                self._durability.forget(segment)
                moved += segment.set_aside()
            active = self._segments[-1]
            self._roller.reactivate(active, self.config.segment_index_bytes)
            removed += active.truncate_to(offset)
            only_empty = active.is_empty and len(self._segments) == 1
            self._last_log_append_time = (NO_TIMESTAMP if only_empty
                                          else last_known_log_append_time(self._segments))
            self._lookups.rebuild(self._segments)
            self._durability.cut(active, self.log_end_offset, bool(moved))
        self._worker.submit(RemoveAndCheckpoint(self, tuple(moved)))
        return removed

    def reset_to(self, offset: int) -> None:
        """Drop every segment and go on, empty, at ``offset``, keeping the last LAT (time
        along the partition never goes back). For a follower whose log ends below its
        leader's log start (retention ran there while it was away): it can only copy from
        there. Here because it replaces the segment list. As in ``truncate_to``, the files
        are set aside now; the I/O worker unlinks them and checkpoints.
        """
        with self._lock:
            self._check_writable()
            moved: list = []
            for segment in reversed(self._segments):  # the last first: the disk sees prefixes
                moved += segment.set_aside()
            active = Segment(self.directory, offset, self.config.index_interval_bytes)
            active.make_active(self.config.segment_index_bytes)
            self._segments = [active]
            self._lookups.rebuild(self._segments)
            self._durability.restart_at(offset)
        self._worker.submit(RemoveAndCheckpoint(self, tuple(moved)))

    # -- lifecycle -------------------------------------------------------------------------

    def close(self, defer_sync: bool = False) -> None:
        """Flush, trim the indexes, checkpoint and leave the clean-shutdown marker.
        ``defer_sync``: no fsync and no marker yet; the caller makes the files of all its
        logs durable at once, then calls ``mark_clean`` (``shutdown.close_all``)."""
        if self._closed:
            return
        with self._wake_lock:
            if self.dormant:  # its files are as its clean close left them, marker included
                self._closed = True
                if not defer_sync:
                    self._let_go()
                return
        sync = not defer_sync
        if sync:
            self.flush()
        with self._checkpoint_lock:
            with self._lock:
                self._closed = True
                self._roller.close()
                for segment in self._segments:
                    segment.close(sync)
            if sync:
                self._roller.sync_sealed()
            recovery.write_checkpoint(self.directory, self.log_end_offset,
                                      self._last_log_append_time, sync)
        if sync:
            self.mark_clean()

    def mark_clean(self, sync: bool = True) -> None:
        """Leave the clean-shutdown marker (what it vouches for is durable) and let go. A
        log closed dormant still has the marker of its last clean close."""
        if not self.dormant:
            recovery.clean_marker(self.directory).touch()
            if sync:
                files.fsync_directory(self.directory)
        self._let_go()

    def close_handles(self) -> None:
        """Release every descriptor and map without flushing, trimming, checkpointing or the
        clean marker: the state a killed process leaves. For a log directory whose disk failed
        (nothing more can be written there) and for crash tests. A dormant log holds none."""
        with self._wake_lock:
            if self.dormant:
                self._closed = True
                self._let_go()
                return
        with self._lock:
            self._closed = True
            self._roller.close(finish=False)
            for segment in self._segments:
                segment.close_handles()
        self._let_go()

    def _let_go(self) -> None:
        """Give back this log's shares of its directory's lock and of the budget (once)."""
        key, self._directory_lock = self._directory_lock, None
        if key is not None:
            dir_lock.release(key)
            self._open_segments.budget.leave()

    def retire(self) -> Path:
        """Topic deletion's fast half: close every handle unsealed and rename the directory
        aside (``files.retire_directory``); returns where it went, for ``remove_retired``."""
        with self._checkpoint_lock:  # not while another thread writes the checkpoint there
            self.close_handles()
            return files.retire_directory(self.directory)

    def delete(self) -> None:
        """Remove the partition's directory and everything in it (topic deletion)."""
        files.remove_retired(self.retire())

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"{self.directory.name} is closed")

    def _check_writable(self) -> None:
        """``_check_open`` for the methods that write: a log woken from dormancy (or about
        to be, here) first makes its marker's removal durable, so no byte it writes can be
        on disk beside a marker that vouches for the log without it."""
        if self._closed:
            raise LogClosedError(f"{self.directory.name} is closed")
        if self._marker_unsynced:
            self.wake()
            self._sync_marker_removal()

    def _sync_marker_removal(self) -> None:
        with self._wake_lock:
            if self._marker_unsynced:
                files.fsync_directory(self.directory)
                self._marker_unsynced = False

    def _marker_removal_synced(self) -> None:
        """A file-system sync that began after the marker's removal made it durable."""
        with self._wake_lock:
            self._marker_unsynced = False

    def __enter__(self) -> "PartitionLog":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.dormant:
            return f"PartitionLog({self.directory.name}, dormant)"
        return (f"PartitionLog({self.directory.name}, start={self.log_start_offset}, "
                f"end={self.log_end_offset}, segments={len(self._segments)})")


MANY_MARKERS = 64  # woken together: from this many, one file-system sync beats an fsync each


def sync_marker_removals(logs: list[PartitionLog]) -> None:
    """Make the marker removals of logs woken together durable ahead of their first writes,
    on the caller's (worker) thread: otherwise each first write fsyncs its directory where
    it runs, and a produce over thousands of partitions after a restart waits for thousands
    of fsyncs. For ``MANY_MARKERS`` or more, one ``syncfs`` covers them all (a freshly
    woken broker has little else unwritten); fewer get an fsync each. A log not woken yet
    is left alone (its marker is still there). A failure leaves a log's to its first write,
    which reports it."""
    pending = [plog for plog in logs
               if plog._marker_unsynced and not plog.dormant and not plog.closed]
    if len(pending) >= MANY_MARKERS:
        try:
            files.sync_filesystem(pending[0].directory)
        except OSError as exc:
            log.warning("marker removals of %d woken logs not synced now (each first write "
                        "syncs its own): %r", len(pending), exc)
            return
        for plog in pending:
            plog._marker_removal_synced()
        return
    for plog in pending:
        try:
            plog._sync_marker_removal()
        except OSError as exc:
            log.debug("%s: marker removal left to the first write: %r", plog.directory.name, exc)
