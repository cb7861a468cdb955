"""One log segment: a ``.log`` file of record batches and its three indexes.

Theory of operation
-------------------
Batches are appended whole with ``pwrite`` at the end of the ``.log``; if the write fails the
file is cut back, so no half-written batch stays behind. Each appended batch may get one entry
in all three indexes (see ``index.py``): the first batch of the segment always does, and after
it every batch that starts ``index_interval_bytes`` or more past the previously indexed one.
The decision depends only on batch positions, i.e. on the log's bytes, never on how appends
were grouped or on a clock, so a follower that copies the leader's batches, and a recovery
that replays them, write identical index files.

Because of that rule every batch that is not indexed starts less than ``index_interval_bytes``
after an indexed one, so any scan that starts from an index entry reads at most one interval
plus one header of log (one ``pread``) before it has seen every header it needs.

Most often batches are larger than the interval and every batch is indexed. Then the batch of
entry k is followed directly by the batch of entry k + 1, and a lookup whose answer lies
between the two needs no log at all: it is entry k + 1 (by time), or entry k (by offset).
The segment keeps, per entry, whether that is so (``_next_is_indexed``, one byte an entry).
Appends and recovery know it; for a segment loaded from disk it is learnt from the header
the first lookup between two entries reads anyway, and kept.

What a segment knows about itself (next offset, first and last LogAppendTime, the largest
CreateTime) is either tracked while appending or, on load, read from the last index entry plus
that short tail scan.

Loading and recovery. A trusted segment (below the recovery point, or closed cleanly) is
loaded from its indexes: they are checked against each other and against the batches their
first and last entries point at, then the short unindexed tail is read. Recovery re-reads
every batch, checks its header, CRC, records, offset continuity and LogAppendTime order,
rebuilds the indexes, and cuts the file after the last good batch. Given the log's recovery point, it trusts the index
entries of the batches before it (their log bytes were fsynced, and so were the entries, by
the checkpoint that wrote that point) when they pass the same checks, and re-reads only from
the last such batch on: recovery costs the unflushed tail, not the segment.

Handles: what the segment knows stays in memory, so a sealed segment can ``release`` its
descriptor and maps and open them again on the next read (one ``os.open``; each index maps
itself on its first lookup). Each (re)open calls ``handles.opened(segment)``, an LRU kept by
the owning log (``handles.py``) that releases the sealed segments read least recently.

Not thread-safe: the owning ``PartitionLog`` serialises access (``fsync`` excepted).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import numpy as np

from tslog.protocol.batch_header import (HEADER_SIZE, HEADER_STRUCT, NO_TIMESTAMP, BatchFormatError,
                                         BatchHeader, check_header, check_records, parse_header,
                                         verify_crc)
from tslog.protocol.records import create_time_column, decode_columns

from . import files
from .batch_io import HeaderWindow, read_batches, write_fully
from .errors import CorruptIndexError
from .index import OffsetIndex, TimestampIndex, check_consistent
from .types import OffsetAndTimestamp

NO_CREATE_TIME = -(2**63)
# Indexes into the raw header tuple (see tslog.protocol.batch_header for the layout).
_LAT_FIELD = BatchHeader._fields.index("log_append_time")
_MAX_CREATE_TIME_FIELD = BatchHeader._fields.index("max_create_time")
_LAST_OFFSET = -1  # "no record yet" for the running CreateTime maximum
# States of _next_is_indexed[k]: is the batch after entry k's batch entry k + 1's batch?
_NOT_KNOWN, _YES, _NO = 0, 1, 2
_new_tuple = tuple.__new__  # tuple.__new__(OffsetAndTimestamp, pair): a NamedTuple without its Python __new__


class Segment:
    """A segment's files and what it knows about their contents."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int,
                 opened: tuple | None = None, index_capacity_bytes: int | None = None) -> None:
        """``opened``: (log descriptor, the three indexes) of empty files already in place
        under this segment's names (``segment_roll.SpareFiles``), so making it opens nothing.
        ``index_capacity_bytes``: the segment opens as the active one (``make_active``
        then has nothing left to do)."""
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = files.segment_file(directory, base_offset, files.LOG_SUFFIX)
        self.handles = None  # the owning log's OpenSegments while sealed (see handles.py)
        self.seal_pending = False  # rolled; an I/O worker seals it (``segment_roll.py``)
        if opened is not None:
            self._fd, (self.offset_index, self.time_index, self.create_time_index) = opened
            self.size = 0
        else:
            self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
            self.size = os.fstat(self._fd).st_size
            capacity = index_capacity_bytes
            self.offset_index = OffsetIndex(files.segment_file(
                directory, base_offset, files.OFFSET_INDEX_SUFFIX), capacity_bytes=capacity)
            self.time_index = TimestampIndex(files.segment_file(
                directory, base_offset, files.TIME_INDEX_SUFFIX), capacity_bytes=capacity)
            self.create_time_index = TimestampIndex(files.segment_file(
                directory, base_offset, files.CREATE_TIME_INDEX_SUFFIX), capacity_bytes=capacity)
        for index in self.indexes:
            index.on_open = self._opened
        self.last_scan_bytes = 0  # log bytes the latest lookup read (for metrics and benches)
        self.recovery_scanned_bytes = 0  # log bytes the latest ``recover`` re-read
        self._forget_contents()

    # -- handles ---------------------------------------------------------------------------

    def _opened(self) -> None:
        if self.handles is not None:
            self.handles.opened(self)

    def _open_log(self) -> int:
        """Open the released log file again (a read of a sealed segment); returns its fd."""
        self._fd = os.open(self.log_path, os.O_RDWR)
        self._opened()
        return self._fd

    def _log_fd(self) -> int:
        return self._fd if self._fd >= 0 else self._open_log()

    @property
    def is_open(self) -> bool:
        return self._fd >= 0 or any(index.is_open for index in self.indexes)

    def release(self) -> None:
        """Close the log and unmap the indexes of a sealed segment, keeping what it knows;
        any later read opens what it needs again."""
        for index in self.indexes:
            index.release()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _forget_contents(self) -> None:
        self.next_offset = self.base_offset
        self.first_log_append_time = NO_TIMESTAMP
        self.max_log_append_time = NO_TIMESTAMP
        self.max_create_time = NO_CREATE_TIME
        self._last_indexed_position = -1
        self._next_is_indexed = bytearray()  # per entry: _NOT_KNOWN, _YES or _NO
        self._tail_unindexed = False  # a batch was appended after the last indexed one
        self._first_batch_length = 0  # of the latest _find_batch's first header

    @property
    def indexes(self) -> tuple[OffsetIndex, TimestampIndex, TimestampIndex]:
        return self.offset_index, self.time_index, self.create_time_index

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    @property
    def index_entries(self) -> int:
        return self.offset_index.entries

    @property
    def index_bytes(self) -> int:
        return sum(index.size_bytes for index in self.indexes)

    # -- appending -------------------------------------------------------------------------

    def append(self, parts, header: BatchHeader) -> int:
        """Write one checked, stamped batch, given as a sequence of buffers, at the end;
        return its position."""
        position = self.size
        indexed = self._index_due(position)
        if indexed:  # its entries' space first: ENOSPC before any byte
            for index in self.indexes:
                index.reserve_entry()
        write_fully(self._fd if self._fd >= 0 else self._open_log(), parts, position, header.batch_length)
        self._track(position, header, indexed)
        return position

    def _index_due(self, position: int) -> bool:
        """Whether a batch at ``position`` gets index entries (the first, then one every
        ``index.interval.bytes``)."""
        return position == 0 or position - self._last_indexed_position >= self.index_interval_bytes

    def _track(self, position: int, header: BatchHeader, indexed: bool) -> None:
        """Account for a batch now at ``position``: index it if ``_index_due`` said so, update the summary."""
        if self.max_create_time < header.max_create_time:
            self.max_create_time = header.max_create_time
        if indexed:
            self._add_entries(position, header)
        else:
            self._tail_unindexed = True
        if position == 0:
            self.first_log_append_time = header.log_append_time
        self.max_log_append_time = header.log_append_time
        self.next_offset = header.base_offset + header.record_count
        self.size = position + header.batch_length

    def _add_entries(self, position: int, header: BatchHeader) -> None:
        relative = header.base_offset - self.base_offset
        self.offset_index.append(relative, position)
        self.time_index.append(header.log_append_time, relative, position)
        self.create_time_index.append(self.max_create_time, relative, position)
        self._last_indexed_position = position
        if self._next_is_indexed:
            self._next_is_indexed[-1] = _NO if self._tail_unindexed else _YES
        self._next_is_indexed.append(_NOT_KNOWN)
        self._tail_unindexed = False

    # -- reading ---------------------------------------------------------------------------

    def scan_headers(self, start: int, end: int) -> Iterator[tuple[int, BatchHeader]]:
        """Yield (position, checked header) of the batches starting in [start, end)."""
        fd = self._log_fd()
        window = HeaderWindow(fd, end, self.index_interval_bytes)
        position = start
        while position < end:
            header = BatchHeader._make(window.fields_at(position))
            check_header(header)
            yield position, header
            position += header.batch_length

    def _find_batch(self, start: int, end: int, field: int, target: int) -> tuple[int, tuple] | None:
        """(position, raw header fields) of the first batch in [start, end) whose ``field``
        is >= ``target``; ``_LAST_OFFSET`` compares the batch's last offset.

        The lookup and fetch hot path: one plain loop over ``struct`` tuples, with no
        generator or NamedTuple per batch.
        """
        # Between two index entries there is usually one batch: one small pread, no window.
        fd = self._log_fd()
        first = os.pread(fd, HEADER_SIZE, start) if start < end else b""
        self.last_scan_bytes = len(first)
        if not first:
            return None
        if len(first) < HEADER_SIZE:
            raise BatchFormatError(f"torn batch header at position {start}")
        fields = HEADER_STRUCT.unpack(first)
        self._first_batch_length = fields[3]
        value = fields[0] + fields[7] if field == _LAST_OFFSET else fields[field]
        if value >= target:
            return start, fields
        if fields[3] < HEADER_SIZE:
            raise BatchFormatError(f"bad batch length {fields[3]} at position {start}")
        position = start + fields[3]
        if position >= end:
            return None
        return self._scan_window(fd, position, end, field, target,
                                 self.index_interval_bytes + HEADER_SIZE)

    def _scan_window(self, fd: int, position: int, end: int, field: int, target: int,
                     want: int) -> tuple[int, tuple] | None:
        """``_find_batch``'s loop over the headers from ``position``, read ``want`` bytes at
        a time."""
        window = HeaderWindow(fd, end, self.index_interval_bytes)
        window.want = want
        try:
            while position < end:
                fields = window.fields_at(position)
                value = fields[0] + fields[7] if field == _LAST_OFFSET else fields[field]
                if value >= target:
                    return position, fields
                position += fields[3]
            return None
        finally:
            self.last_scan_bytes += window.bytes_read

    def position_of(self, offset: int) -> int | None:
        """File position of the batch holding ``offset``, or None if it is not in this segment."""
        if offset < self.base_offset or offset >= self.next_offset:
            return None
        index = self.offset_index
        i = index.count_keys_below(offset - self.base_offset + 1)  # entries at or below it
        start = index.position(i - 1)
        if i < index.entries:
            if self._next_is_indexed[i - 1] == _YES:  # the batch of entry i - 1 is the only one
                return start
            end = index.position(i)
        elif not self._tail_unindexed:
            return start
        else:
            end = self.size
        found = self._find_batch(start, end, _LAST_OFFSET, offset)
        if found is None:
            raise CorruptIndexError(f"offset {offset} not found between positions {start} and {end}")
        if i < index.entries:
            self._learn(i - 1, start, end)
        return found[0]

    def read(self, position: int, max_bytes: int, end_position: int) -> bytes:
        """Whole batches from ``position``: as many as fit in ``max_bytes``, but at least one.

        ``end_position`` caps the read (the high watermark's position, or the segment end).
        The cut is found from the index and batch headers first, so the records are read
        once, by one ``pread`` of exactly the bytes returned.
        """
        limit = min(end_position, self.size) - position
        if limit <= 0:
            return b""
        fd = self._log_fd()
        if max_bytes >= limit:
            return os.pread(fd, limit, position)
        length = self._whole_batches_within(position, position + max_bytes)
        if length == 0:  # the first batch alone is larger than max_bytes: send it whole
            length = self.read_header_at(position).batch_length
        return os.pread(fd, length, position)

    def _whole_batches_within(self, position: int, end: int) -> int:
        """Bytes from ``position`` (a batch start) up to the last batch that ends by ``end``."""
        i = self.offset_index.count_positions_at_or_below(end)
        hop = max(position, self.offset_index.position(i - 1)) if i else position
        window = HeaderWindow(self._log_fd(), end, self.index_interval_bytes)
        while hop + HEADER_SIZE <= end:
            length = window.fields_at(hop)[3]
            if hop + length > end:
                break
            hop += length
        return hop - position

    def _scan_before(self, index: TimestampIndex, i: int, field: int, target: int):
        """(position, raw header fields) of the first batch whose ``field`` >= ``target``
        between entry i - 1's batch and entry i's, or None: then the answer is entry i's
        batch (if there is an entry i). Entries [0, i) have keys < ``target``. Reads no log
        when nothing lies between the two entries, and learns whether it does when unsure."""
        if i == 0 and index.entries:  # entry 0 is the batch at position 0: none before it
            self.last_scan_bytes = 0
            return None
        between = 0 < i < index.entries
        if between and self._next_is_indexed[i - 1] == _YES:
            self.last_scan_bytes = 0
            return None
        start = index.position(i - 1) if i else 0
        end = index.position(i) if i < index.entries else self.size
        if between and self._next_is_indexed[i - 1] == _NO:  # several batches: one read
            self.last_scan_bytes = 0
            return self._scan_window(self._log_fd(), start, end, field, target,
                                     min(end - start, self.index_interval_bytes + HEADER_SIZE))
        found = self._find_batch(start, end, field, target)
        if between:
            self._learn(i - 1, start, end)
        return found

    def find_by_log_append_time(self, timestamp: int) -> OffsetAndTimestamp | None:
        """(offset, LAT) of the first batch with LogAppendTime >= ``timestamp``, if any. The hot
        path: entry 0, or an entry known to follow its predecessor's batch (``_YES``), is the
        answer as is."""
        if self.size == 0 or self.max_log_append_time < timestamp:
            return None
        index = self.time_index
        i, time, relative = index.search(timestamp)
        if time is not None and (i == 0 or self._next_is_indexed[i - 1] == _YES):
            self.last_scan_bytes = 0
            return _new_tuple(OffsetAndTimestamp, (self.base_offset + relative, time))
        found = self._scan_before(index, i, _LAT_FIELD, timestamp)
        if found is not None:
            fields = found[1]
            return OffsetAndTimestamp(fields[0], fields[_LAT_FIELD])
        if time is not None:
            return OffsetAndTimestamp(self.base_offset + relative, time)
        raise CorruptIndexError(f"LogAppendTime {timestamp} not found though the segment max is later")

    def find_by_create_time(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, CreateTime) of the first record with CreateTime >= ``timestamp``, if any."""
        if self.size == 0 or self.max_create_time < timestamp:
            return None
        index = self.create_time_index
        i = index.count_keys_below(timestamp)
        found = self._scan_before(index, i, _MAX_CREATE_TIME_FIELD, timestamp)
        if found is not None:
            return self._first_record_at_or_after(found[0], BatchHeader._make(found[1]), timestamp)
        if i < index.entries:
            position = index.position(i)
            return self._first_record_at_or_after(position, self.read_header_at(position), timestamp)
        raise CorruptIndexError(f"CreateTime {timestamp} not found though the segment max is later")

    def _first_record_at_or_after(self, position: int, header: BatchHeader, timestamp: int):
        if header.first_create_time >= timestamp:  # the first record: its time is in the
            return header.base_offset, header.first_create_time  # header (checked on append)
        create_times = self._create_times(position, header)
        first = int(np.argmax(create_times >= timestamp))
        return header.base_offset + first, int(create_times[first])

    def _create_times(self, position: int, header: BatchHeader) -> np.ndarray:
        """The CreateTime of every record of the batch at ``position``: its column alone
        when stored uncompressed (one read of 8 bytes a record), else the decoded batch."""
        column = create_time_column(header)
        if column is not None:
            start, length = column
            raw = os.pread(self._log_fd(), length, position + start)
            self.last_scan_bytes += len(raw)
            if len(raw) == length:
                return np.frombuffer(raw, "<i8")
        batch = os.pread(self._log_fd(), header.batch_length, position)  # decoding says
        self.last_scan_bytes += len(batch)  # what is wrong with a batch cut short
        return decode_columns(batch).create_time

    def _learn(self, k: int, start: int, end: int) -> None:
        """Keep what the lookup that just ran ``_find_batch`` from entry ``k``'s batch (at
        ``start``; the next entry's at ``end``) saw: whether anything lies between them."""
        self._next_is_indexed[k] = _YES if start + self._first_batch_length == end else _NO

    def read_header_at(self, position: int) -> BatchHeader:
        return parse_header(os.pread(self._log_fd(), HEADER_SIZE, position))

    # -- truncation, lifecycle -------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Drop every batch at or after ``offset`` (a batch boundary); return bytes removed."""
        if offset >= self.next_offset:
            return 0
        if offset <= self.base_offset:
            position = 0
        else:
            position = self.position_of(offset)
            if self.read_header_at(position).base_offset != offset:
                raise ValueError(f"offset {offset} is not the start of a batch")
        removed = self.size - position
        keep = self.offset_index.count_keys_below(offset - self.base_offset)
        for index in self.indexes:
            index.truncate_entries(keep)
        del self._next_is_indexed[keep:]
        os.ftruncate(self._log_fd(), position)
        self.size = position
        if keep:
            self._restore_from_last_entry()
        else:
            self._forget_contents()
        return removed

    def make_active(self, index_capacity_bytes: int) -> None:
        """Make the indexes writable; an active segment is never released, so it leaves the
        log's LRU of sealed segments (a truncation can make a sealed segment active again)."""
        self.untrack_handles()
        for index in self.indexes:
            index.make_writable(index_capacity_bytes)
        if self._fd < 0:
            self._fd = os.open(self.log_path, os.O_RDWR)

    def track_handles(self, handles) -> None:
        """A sealed segment joins its log's LRU (``handles.OpenSegments``)."""
        self.handles = handles
        if self.is_open:
            handles.opened(self)

    def untrack_handles(self) -> None:
        """Leave the log's care: its LRU, and any seal the log's worker still owes (the
        caller, under the log's lock, is making it active, closing or deleting it)."""
        self.seal_pending = False
        if self.handles is not None:
            self.handles.discard(self)
            self.handles = None

    def seal(self) -> None:
        self.seal_pending = False
        for index in self.indexes:
            index.seal()

    def seal_unsynced(self) -> list[tuple[int, int]]:
        """Remap the indexes read-only; return (duplicate descriptor, length) per index: the
        trim and fsync the caller owes to finish the seal, outside the log's lock."""
        self.seal_pending = False
        return [owed for owed in (index.seal_unsynced() for index in self.indexes) if owed]

    def fileno_for_sync(self) -> int:
        """A descriptor of the log (a duplicate, or the file opened again if released) that
        stays valid even if the segment is deleted meanwhile; the caller closes it."""
        return os.dup(self._fd) if self._fd >= 0 else os.open(self.log_path, os.O_RDONLY)

    def index_filenos_for_sync(self) -> list[int]:
        """Duplicate descriptors of the writable (active) indexes; the caller closes them."""
        return [fd for fd in (index.fileno_for_sync() for index in self.indexes) if fd is not None]

    def sync(self) -> None:
        """fdatasync the log and any writable index (after recovery rewrote them)."""
        os.fdatasync(self._log_fd())
        for index in self.indexes:
            index.sync()

    def close(self, sync: bool = True) -> None:
        for index in self.indexes:
            index.close(sync)
        self.close_handles()

    def close_handles(self) -> None:
        """Release descriptors and maps without sealing (see ``PartitionLog.close_handles``)."""
        self.untrack_handles()
        for index in self.indexes:
            index.close_handles()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Release and remove the files, the log first so a crash midway leaves orphan
        indexes (cleaned at load) rather than a log without its history. Not sealed first:
        trimming and fsyncing files about to go (three fsyncs when a follower's truncation
        drops its active segment, on the event loop) would protect nothing."""
        self.close_handles()
        self.log_path.unlink(missing_ok=True)
        for index in self.indexes:
            index.path.unlink(missing_ok=True)

    def set_aside(self) -> tuple[Path, ...]:
        """Release the handles and rename the files to temporary names; return the new
        paths, for the I/O worker to unlink. Why: a follower's truncation runs on the event
        loop, and a rename frees no blocks (an unlink of a large file may take milliseconds);
        the names are free at once for a segment at the same base offset. The log first, as
        in ``delete``; a crash before the unlink leaves ``*.tmp`` files, removed at open."""
        self.close_handles()
        moved = []
        for path in (self.log_path, *(index.path for index in self.indexes)):
            aside = path.with_name(path.name + files.TEMP_SUFFIX)
            try:
                os.rename(path, aside)
            except FileNotFoundError:  # an index never written (recovery rebuilds them)
                continue
            moved.append(aside)
        return tuple(moved)

    def load_trusted(self, previous_log_append_time: int) -> bool:
        """Load a segment whose log is trusted (flushed, or closed cleanly).

        Checks the indexes against each other and against the batch their last entry points
        at, then reads the short unindexed tail. Returns False if anything is off; the caller
        then runs ``recover``, which rebuilds the indexes from the log.
        """
        self._forget_contents()
        try:
            check_consistent(*self.indexes, self.size)
            if self.size and not self.index_entries:
                raise CorruptIndexError("a non-empty segment has no index entry")
            if self.index_entries:
                self._check_first_entry(previous_log_append_time)
                first_time = self.time_index.entry(0)[0]
                self.first_log_append_time = first_time
                self._next_is_indexed = bytearray(self.index_entries)
                self._restore_from_last_entry()
        except (CorruptIndexError, BatchFormatError):
            self._forget_contents()
            return False
        return True

    def _restore_from_last_entry(self) -> None:
        """Re-derive the summary from the last index entry plus the scan of the tail after it."""
        count = self.index_entries
        if count == 0:
            self._forget_contents()
            return
        relative, position = self.offset_index.entry(count - 1)
        time, _, _ = self.time_index.entry(count - 1)
        self.max_create_time = self.create_time_index.entry(count - 1)[0]
        self._last_indexed_position = position
        self.next_offset = self.base_offset + relative
        self.max_log_append_time = time
        scanned_any = False
        self._tail_unindexed = False
        for batch_position, header in self.scan_headers(position, self.size):
            if header.base_offset != self.next_offset:
                raise CorruptIndexError(
                    f"batch at position {batch_position} has base offset {header.base_offset}, "
                    f"expected {self.next_offset}"
                )
            if header.log_append_time < self.max_log_append_time or (
                not scanned_any and header.log_append_time != time
            ):
                raise CorruptIndexError(f"LogAppendTime out of order at position {batch_position}")
            self._tail_unindexed = scanned_any
            scanned_any = True
            self.max_log_append_time = header.log_append_time
            self.max_create_time = max(self.max_create_time, header.max_create_time)
            self.next_offset = header.next_offset
            end = batch_position + header.batch_length
        if not scanned_any or end != self.size:
            raise CorruptIndexError("the log tail does not end on a batch boundary")

    def recover(self, previous_log_append_time: int, index_capacity_bytes: int,
                trusted_offset: int | None = None) -> int:
        """Validate every batch, rebuild the indexes and cut the log after the last good batch.

        ``trusted_offset``: the log's recovery point, when it falls in this segment. Batches
        before it were fsynced and so were their index entries; if those entries pass the
        sanity checks, recovery keeps them and re-reads only from the last one on.
        Returns the number of bytes cut off (a torn, zero-filled or garbage tail);
        ``recovery_scanned_bytes`` says how many it re-read.
        """
        fd = self._log_fd()
        valid_bytes = self.size
        start, last_time = 0, previous_log_append_time
        kept = self._keep_trusted_entries(trusted_offset, previous_log_append_time,
                                          index_capacity_bytes)
        if kept is None:
            for index in self.indexes:
                index.reset(index_capacity_bytes)
            self._forget_contents()
            self.size = 0
        else:
            start = self.size
            last_time = self.max_log_append_time
        self.recovery_scanned_bytes = valid_bytes - start
        for position, header, batch in read_batches(fd, valid_bytes, start):
            if header is None or header.base_offset != self.next_offset:
                break
            if header.log_append_time < max(last_time, 0):
                break
            try:
                verify_crc(batch, header)
                check_records(batch, header)  # a batch no consumer could read is not kept
            except BatchFormatError:
                break
            last_time = header.log_append_time
            self._track(position, header, self._index_due(position))
        truncated = valid_bytes - self.size
        if truncated:
            os.ftruncate(fd, self.size)
        return truncated

    def _keep_trusted_entries(self, trusted_offset: int | None, previous_log_append_time: int,
                              index_capacity_bytes: int) -> int | None:
        """Keep the index entries of batches before ``trusted_offset`` and restore the state
        as of the end of the last one; return how many entries were kept, or None (nothing
        to keep, or the entries fail a check: then recovery rebuilds them all)."""
        if trusted_offset is None or trusted_offset <= self.base_offset or self.size == 0:
            return None
        self._forget_contents()
        try:
            written = self.offset_index.count_written()
            keep = min(written, self.offset_index.count_keys_below_in(
                trusted_offset - self.base_offset, written))
            if keep == 0:
                return None
            for index in self.indexes:
                index.keep_entries(keep, index_capacity_bytes)
            check_consistent(*self.indexes, self.size)
            self._check_first_entry(previous_log_append_time)
            relative, position = self.offset_index.entry(keep - 1)
            time = self.time_index.entry(keep - 1)[0]
            first_time = self.time_index.entry(0)[0]
            header = self._header_within(position)
            if (header.base_offset != self.base_offset + relative
                    or header.log_append_time != time
                    or self.create_time_index.entry(keep - 1)[0] < header.max_create_time
                    or position + header.batch_length > self.size):
                raise CorruptIndexError(f"entry {keep - 1} does not match its batch")
        except (CorruptIndexError, BatchFormatError):
            self._forget_contents()
            return None
        self.first_log_append_time = first_time
        self.max_log_append_time = time
        self.max_create_time = self.create_time_index.entry(keep - 1)[0]
        self.next_offset = header.next_offset
        self._last_indexed_position = position
        self._next_is_indexed = bytearray(keep)
        self.size = position + header.batch_length
        return keep

    def _header_within(self, position: int) -> BatchHeader:
        """The header at ``position``, or CorruptIndexError if the log ends before it (a
        file cut below what its index or the recovery point says)."""
        if position + HEADER_SIZE > self.size:
            raise CorruptIndexError(f"an entry points at {position}, too near the log end")
        return self.read_header_at(position)

    def _check_first_entry(self, previous_log_append_time: int) -> None:
        """Entry 0 against the first batch: a zeroed entry 0 (relative offset 0, position 0,
        time 0) passes ``check_consistent``, so its times are compared with the header."""
        first = self._header_within(0)
        time = self.time_index.entry(0)[0]
        create_time = self.create_time_index.entry(0)[0]
        if (first.base_offset != self.base_offset or time != first.log_append_time
                or time < previous_log_append_time
                or create_time != max(NO_CREATE_TIME, first.max_create_time)):
            raise CorruptIndexError("index entry 0 does not match the first batch")

    def __repr__(self) -> str:
        return f"Segment(base={self.base_offset}, size={self.size}, next={self.next_offset})"
