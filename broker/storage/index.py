"""Memory-mapped, fixed-size-entry index files: the offset index and the time indexes.

Theory of operation
-------------------
A segment has three index files whose entries are written together, for the same batches
(the first batch of the segment, then every batch that starts ``index.interval.bytes`` or more
after the previously indexed one). Entry *i* of every index therefore names the same batch,
so a lookup needs one binary search and no translation between files, and a sanity check can
compare the files against each other.

    offset index  (.index)      8 bytes: int32 relative_offset, int32 position
    time index    (.timeindex) 16 bytes: int64 log_append_time, int32 relative_offset, int32 position
    create index  (.ctindex)   16 bytes: int64 max_create_time_so_far, int32 relative_offset, int32 position

All little-endian. Kafka's time entry is 12 bytes and needs a second search in the offset
index; tslog spends 4 more bytes to carry the position and to keep the key 8-byte aligned, so
the search is ``bisect`` running in C over a strided ``memoryview`` of the map.

The active segment's files are sized (sparse) to ``segment.index.bytes`` and mapped
read-write; ``seal`` trims a file to its entries when the segment rolls or the log closes,
so the number of entries of a sealed file is its length divided by the entry size. A file left
untrimmed by a crash is caught by ``sanity_check`` (its zero padding breaks the ordering) and
rebuilt from the log: indexes carry no checksum because they are always derivable.

Full disks: a page of a map that the file system cannot back kills the process with SIGBUS
when touched (tmpfs on a read or a write of a hole, ext4 and xfs on a write), where a
``pwrite`` would have raised ENOSPC. So no page is touched through a map unless it is known to
exist: writes go only below ``_room``, space reserved with ``posix_fallocate`` a chunk ahead
(ENOSPC there is an ordinary OSError, raised before the batch's log bytes are written:
``Segment.append`` calls ``reserve_entry`` first); reads go only below ``entries``, and a file
opened from disk counts as entries only what lies before its first hole (``SEEK_HOLE``), so
the recovery of an untrimmed index left by a crash on a full disk reads what exists and
nothing more (a hole of at most a page at a file's end is written back as zeros first:
``filled_extent``). Recovery rewrites entries in place (``keep_entries`` zeroes the dropped ones
with ``pwrite`` instead of cutting the file), so it needs no space it did not have.

No memoryview of a map outlives the call that made it, so ``resize``/``close`` never meet a
live export (Python raises BufferError there instead of Kafka's SIGSEGV).

Handles: an index holds no descriptor, ever past the call that needs one. Its map is made
through the C library (``maps.py``), which keeps none, so a file is opened, mapped and closed
at once; the few calls that need a descriptor (a reservation, a trim, an fsync) open the file
for themselves. ``release`` unmaps a sealed index, keeping the entry count; the next lookup
maps the file again (``_map_sealed``) and tells the segment through ``on_open``, so its log
can bound how many sealed segments stay mapped (``handles.py``).
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from pathlib import Path

import numpy as np

from .errors import CorruptIndexError
from .maps import FileMap, map_file

PAGE_BYTES = mmap.PAGESIZE
RESERVE_MAX_BYTES = 1 << 20  # a reservation doubles from one page up to this
KEY_SAMPLE_EVERY = 16  # count_keys_below's first level: every 16th key in a Python list
_ZEROS = bytes(1 << 20)
_bisect_left = bisect.bisect_left


def data_extent(fd: int, length: int) -> int:
    """Bytes of the file before its first hole (all of it where the file system cannot
    tell): what may be read through a map even when the disk is full."""
    if length == 0:
        return 0
    try:
        return min(os.lseek(fd, 0, os.SEEK_HOLE), length)
    except OSError:
        return length


def filled_extent(fd: int, length: int) -> int:
    """``data_extent``, after writing back as zeros a hole of at most a page at the file's
    end: zero entries (a first offset-index entry is relative offset 0 at position 0) that
    a sparse copy (``cp --sparse=always``, ``rsync -S``) or a file system storing zero
    blocks as holes (ZFS with compression) made of a small file. Counted as missing, they
    had a cleanly closed index rebuilt, with its fsyncs. A longer hole is a crash's
    unreserved space, left alone; on a full disk the hole stays and counts as missing."""
    extent = data_extent(fd, length)
    if extent < length <= extent + PAGE_BYTES:
        try:
            zero_range(fd, extent, length)
        except OSError:
            return extent
        return length
    return extent


def zero_range(fd: int, start: int, stop: int) -> None:
    """Write zeros over [start, stop) with ``pwrite`` (pages that exist: no new space)."""
    while start < stop:
        start += os.pwrite(fd, memoryview(_ZEROS)[: min(len(_ZEROS), stop - start)], start)


class MmapIndex:
    """One index file. Not thread-safe: its partition log owns it."""

    ENTRY: struct.Struct
    KEY_FORMAT: str  # memoryview.cast format of the search key
    DTYPE: np.dtype

    def __init__(self, path: Path, spare: bool = False,
                 capacity_bytes: int | None = None) -> None:
        """``spare``: the file is a next segment's, made ahead (``segment_roll.SpareFiles``):
        preallocated zeros, no entry yet, mapped writable at once. ``capacity_bytes``: an
        active segment's index, sized as ``make_writable`` sizes it and mapped writable
        through the one descriptor opened here (a broker's start opens thousands)."""
        self.path = path
        self._file_map: FileMap | None = None
        self._map: memoryview | None = None  # the map's bytes
        self._columns: dict[int, memoryview] = {}  # slot -> strided view of that field
        self._key_sample: list[int] | None = None  # keys of entries 0, 16, 32, ... (see below)
        self._key_stride = self.ENTRY.size // struct.calcsize(self.KEY_FORMAT)
        self.on_open = None  # called with no argument when a released index maps its file again
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            length = os.fstat(fd).st_size
            extent = data_extent(fd, length) if spare else filled_extent(fd, length)
            existing = extent // self.ENTRY.size
            self.entries = 0 if spare else existing
            self._torn = not spare and length % self.ENTRY.size != 0
            self._capacity = length // self.ENTRY.size
            self._room = existing  # entries that may be written through the map (module doc)
            self._writable = spare
            if capacity_bytes is not None:
                self._writable = True
                self._capacity = self._whole_entries(capacity_bytes, self.entries)
                self._room = min(self._room, self._capacity)
                length = self._capacity * self.ENTRY.size
                os.ftruncate(fd, length)
            if length > 0:
                self._file_map = FileMap(fd, length, self._writable)
                self._map = self._file_map.buffer
        finally:
            os.close(fd)

    def _open_fd(self) -> int:
        """A descriptor of the file for one call; the caller closes it."""
        return os.open(self.path, os.O_RDWR)

    # -- mapping ---------------------------------------------------------------------------

    def _unmap(self) -> None:
        """Release the cached column views, then the map (no view may outlive it)."""
        self._key_sample = None
        for column in self._columns.values():
            column.release()
        self._columns.clear()
        if self._file_map is not None:
            self._map = None
            self._file_map.close()
            self._file_map = None

    def _map_file(self, length: int) -> None:
        self._unmap()
        if length > 0:
            self._file_map = map_file(self.path, length, self._writable)
            self._map = self._file_map.buffer

    @property
    def is_open(self) -> bool:
        return self._file_map is not None

    def release(self) -> None:
        """Unmap a sealed index, keeping the entry count: the next lookup maps it again. For
        sealed segments nobody has read for a while (``handles.py``)."""
        assert not self._writable, "release of a writable index"
        self._unmap()

    def _map_sealed(self) -> None:
        """Map a released sealed index again (its file holds exactly ``entries`` entries)."""
        self._map_file(self.entries * self.ENTRY.size)
        if self.on_open is not None:
            self.on_open()

    @classmethod
    def _whole_entries(cls, capacity_bytes: int, entries: int) -> int:
        """A writable file's capacity in entries: ``capacity_bytes`` rounded down to whole
        entries, never below the entries it holds, nor below one."""
        return max(capacity_bytes // cls.ENTRY.size, entries, 1)

    def make_writable(self, capacity_bytes: int) -> None:
        """Size the file (sparse) to ``capacity_bytes`` (rounded down to whole entries) and
        map it read-write; space is reserved as entries come (``reserve_entry``)."""
        capacity = self._whole_entries(capacity_bytes, self.entries)
        if self._writable and self._map is not None and capacity == self._capacity:
            return  # already so (a pre-created next segment's, or a still-active one's)
        self._writable = True
        self._capacity = capacity
        self._room = min(self._room, capacity)
        os.truncate(self.path, capacity * self.ENTRY.size)
        self._map_file(capacity * self.ENTRY.size)

    def reserve_entry(self) -> None:
        """Make sure the next entry's bytes exist on disk before anything is written: on a
        full disk this raises OSError (ENOSPC) while nothing of the batch is written yet."""
        if self.entries >= self._room:
            self._make_room()

    def _make_room(self) -> None:
        """Reserve the next chunk with ``posix_fallocate`` (growing the file when recovery
        replays more entries than it was sized for), then write it with zeros (``pwrite``),
        so no entry is the first write through the map to a page the page cache lacks.
        Such a write faults in a large folio over the file's reserved and sparse pages
        alike, and on this kernel (Linux 6.18, ext4) that fault stalled the event loop for
        tens of milliseconds, once per index at its second page (``bench/loop_stall.py``,
        its no-roll row); a page written first faults at once. An empty log keeps its
        sparse files, which take no disk space."""
        assert self._writable, "append to a sealed index"
        if self._room >= self._capacity:
            self.make_writable(max(self._capacity * 2, 16) * self.ENTRY.size)
        start = self._room * self.ENTRY.size
        chunk = min(max(PAGE_BYTES, start), RESERVE_MAX_BYTES)
        stop = min(start + chunk, self._capacity * self.ENTRY.size)
        fd = self._open_fd()
        try:
            os.posix_fallocate(fd, start, stop - start)
            zero_range(fd, start, stop)
        finally:
            os.close(fd)
        self._room = stop // self.ENTRY.size

    def seal(self, sync: bool = True) -> None:
        """Trim the file to its entries and map it read-only (segment rolled or log closing).
        ``sync`` False: the caller makes the trim durable (a broker's shutdown, at once)."""
        owed = self.seal_unsynced()
        if owed is not None:
            fd, length = owed
            try:
                os.ftruncate(fd, length)
                if sync:  # a sealed index is trusted at the next open: make it durable once
                    os.fsync(fd)
            finally:
                os.close(fd)

    def seal_unsynced(self) -> tuple[int, int] | None:
        """The quick half of ``seal``: stop writing and hand over the file. Returns a
        descriptor of it (opened for the caller, who closes it) and the length the caller
        owes the file (trim, then fsync), or None if the index was sealed already. So an I/O
        worker holds the log's lock only for this hand-over (one open) and trims and syncs
        outside it; until then the
        file keeps its zero padding, which is what a crash leaves of an active index (the
        next open rebuilds it). No ``msync``: ``fsync`` writes the shared map's pages too.

        The writable map stays, not swapped for a read-only one of the trimmed length: an
        ``munmap`` holds the GIL (CPython's mmap does not release it) and, in a process
        whose threads run on several CPUs, waits for every CPU to drop the mapping from its
        TLB; on this VM that kept the event loop from running for milliseconds at every roll
        (``bench/loop_stall.py``). Reads never go past ``entries``, so the map's pages past
        the trimmed end are never touched."""
        if not self._writable:
            return None
        self._writable = False
        self._capacity = self._room = self.entries
        self._torn = False
        return self._open_fd(), self.entries * self.ENTRY.size

    @classmethod
    def make_spare_file(cls, path: Path, capacity_bytes: int) -> None:
        """Make a next segment's index file (``segment_roll.SpareFiles``): sized to
        ``capacity_bytes`` in whole entries, its first page reserved and written (see
        ``_make_room``), with plain file calls and no map: mapping and unmapping it here
        would hold the GIL in the I/O worker for as long as the ``munmap`` takes (see
        ``seal_unsynced``). On a full disk this raises ENOSPC, here and not in a map."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.ftruncate(fd, cls._whole_entries(capacity_bytes, 0) * cls.ENTRY.size)
            os.posix_fallocate(fd, 0, PAGE_BYTES)
            os.pwrite(fd, b"\0", 0)
        finally:
            os.close(fd)

    def close(self, sync: bool = True) -> None:
        if self._writable and self._file_map is not None:
            self.seal(sync)
        self.close_handles()

    def close_handles(self) -> None:
        """Unmap without trimming: what a crash leaves, or a failed disk needs."""
        self._unmap()

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    # -- entries ---------------------------------------------------------------------------

    def append(self, *fields: int) -> None:
        if self.entries >= self._room:
            self._make_room()  # recovery's appends (a producer's reserved it beforehand)
        self.ENTRY.pack_into(self._map, self.entries * self.ENTRY.size, *fields)
        if self._key_sample is not None and self.entries % KEY_SAMPLE_EVERY == 0:
            self._key_sample.append(fields[0])
        self.entries += 1

    def reset(self, capacity_bytes: int) -> None:
        """Drop every entry and make the file writable again (recovery rebuilds it)."""
        self.keep_entries(0, capacity_bytes)

    def keep_entries(self, count: int, capacity_bytes: int) -> None:
        """Keep the first ``count`` entries, drop the rest (a crash may have left the file
        untrimmed, or with entries recovery must write again) and make it writable. The
        dropped entries are zeroed in place, not cut off: recovery writes most of them again,
        and on a full disk the pages it would have freed might not come back."""
        self._unmap()
        keep = min(count, self.entries)
        capacity = self._whole_entries(capacity_bytes, keep)
        fd = self._open_fd()  # one descriptor for all of it: a crash start does this per log
        try:
            zero_range(fd, keep * self.ENTRY.size, self.entries * self.ENTRY.size)
            self.entries = keep
            self._torn = False
            self._writable = True
            self._capacity = capacity
            self._room = min(self._room, capacity)
            os.ftruncate(fd, capacity * self.ENTRY.size)  # as make_writable, on this descriptor
            self._file_map = FileMap(fd, capacity * self.ENTRY.size, True)
            self._map = self._file_map.buffer
        finally:
            os.close(fd)

    def sync(self) -> None:
        """fdatasync the file, map included (recovery and checkpoints make entries durable)."""
        fd = self.fileno_for_sync()
        if fd is not None:
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)

    def fileno_for_sync(self) -> int | None:
        """A descriptor of a writable index, to fsync outside the log's lock (the caller
        closes it); fsync writes the shared map's pages too."""
        return os.open(self.path, os.O_RDONLY) if self._writable and self.is_open else None

    def truncate_entries(self, count: int) -> None:
        """Forget entries from ``count`` on (the log was truncated below them)."""
        if count < self.entries and self._writable:
            start, stop = count * self.ENTRY.size, self.entries * self.ENTRY.size
            self._map[start:stop] = bytes(stop - start)
        self.entries = min(count, self.entries)
        self._key_sample = None

    def entry(self, i: int) -> tuple[int, ...]:
        if self._map is None:
            self._map_sealed()
        return self.ENTRY.unpack_from(self._map, i * self.ENTRY.size)

    def last_entry(self) -> tuple[int, ...] | None:
        return self.entry(self.entries - 1) if self.entries else None

    def count_keys_below(self, key: int) -> int:
        """How many entries have a search key < ``key`` (bisect_left), in two steps: a bisect
        over a Python list of every 16th key, then one over at most 16 keys of the map.

        Why two: every lookup by time calls this. A bisect over the map's strided view makes
        an int object per probe (about 13 for a 64 MiB segment's index), each probe touching
        another page of the map; the list's probes compare existing ints, and the map is
        touched within one 256-byte stretch. The list costs a 16th of an int per entry."""
        sample = self._key_sample
        if sample is None:
            if self.entries == 0:
                return 0
            sample = self._sample_keys()
        j = bisect.bisect_left(sample, key)  # sample[j - 1] < key <= sample[j]
        high = j * KEY_SAMPLE_EVERY
        if high > self.entries:
            high = self.entries
        low = high - KEY_SAMPLE_EVERY + 1 if j else 0  # after the clip, still <= the true low
        return bisect.bisect_left(self._columns[0], key, low if low > 0 else 0, high)

    def _sample_keys(self) -> list[int]:
        """Cache the key column and the list of every 16th key (``append`` extends it, any
        other change of the entries drops it)."""
        if self._map is None:
            self._map_sealed()
        column = self._columns.get(0)
        if column is None:
            with memoryview(self._map) as raw, raw.cast(self.KEY_FORMAT) as keys:
                column = self._columns[0] = keys[:: self._key_stride]
        self._key_sample = column[: self.entries : KEY_SAMPLE_EVERY].tolist()
        return self._key_sample

    def count_keys_at_or_below(self, key: int) -> int:
        """How many entries have a search key <= ``key`` (bisect_right)."""
        return self._bisect(key, slot=0, right=True)

    def count_keys_below_in(self, key: int, count: int) -> int:
        """``count_keys_below`` over the first ``count`` entries only (the rest may be junk)."""
        return self._bisect(key, slot=0, right=False, count=count)

    def _bisect(self, key: int, slot: int, right: bool, count: int | None = None) -> int:
        """Binary search over one field of every entry, viewed as a strided column of the map.

        The column view is made once per mapping and cached; ``_unmap`` releases it.
        """
        if self.entries == 0:
            return 0
        column = self._columns.get(slot)
        if column is None:
            column = self._column(slot)
        search = bisect.bisect_right if right else bisect.bisect_left
        return search(column, key, 0, self.entries if count is None else count)

    def _column(self, slot: int) -> memoryview:
        """Cache and return field ``slot`` of every entry (in units of the key's format) as
        a strided view of the map; ``_unmap`` releases it."""
        if self._map is None:
            self._map_sealed()
        with memoryview(self._map) as raw, raw.cast(self.KEY_FORMAT) as keys:
            column = self._columns[slot] = keys[slot :: self._key_stride]
        return column

    def to_numpy(self) -> np.ndarray:
        """A copy of the entries as a structured array, for vectorised sanity checks."""
        if self.entries == 0:
            return np.zeros(0, dtype=self.DTYPE)
        if self._map is None:
            self._map_sealed()
        return np.frombuffer(self._map, dtype=self.DTYPE, count=self.entries).copy()

    @property
    def size_bytes(self) -> int:
        return self.entries * self.ENTRY.size

    @property
    def is_torn(self) -> bool:
        """True when the file length was not a whole number of entries when opened."""
        return self._torn


class OffsetIndex(MmapIndex):
    """relative_offset -> position; key: relative offset (int32 at stride 2)."""

    ENTRY = struct.Struct("<ii")
    KEY_FORMAT = "i"
    DTYPE = np.dtype([("relative_offset", "<i4"), ("position", "<i4")])

    def position(self, i: int) -> int:
        """Entry ``i``'s file position, from a cached column of the map: no struct call and
        no tuple, on every Fetch's path (``Segment.position_of``)."""
        column = self._columns.get(1)
        if column is None:
            column = self._column(1)
        return column[i]

    def count_positions_at_or_below(self, position: int) -> int:
        """How many entries point at a file position <= ``position``."""
        return self._bisect(position, slot=1, right=True)

    def count_written(self) -> int:
        """How many leading entries are not zero padding: a crash leaves an active index
        untrimmed, its preallocated tail all zeros, and only entry 0 has position 0. A binary
        search (about 20 reads for a full 10 MiB file); ``check_consistent`` judges the rest."""
        if self.entries == 0 or self.entry(0) != (0, 0):
            return 0
        low, high = 1, self.entries
        while low < high:
            middle = (low + high) // 2
            if self.entry(middle)[1] > 0:
                low = middle + 1
            else:
                high = middle
        return low


class TimestampIndex(MmapIndex):
    """timestamp -> (relative_offset, position); key: timestamp (int64 at stride 2).

    Used twice per segment: for LogAppendTime (strictly ordered by the rules of time) and for
    the running maximum of CreateTime (non-decreasing by construction).
    """

    ENTRY = struct.Struct("<qii")
    KEY_FORMAT = "q"
    DTYPE = np.dtype([("timestamp", "<i8"), ("relative_offset", "<i4"), ("position", "<i4")])

    def search(self, key: int) -> tuple[int, int | None, int | None]:
        """(i, timestamp of entry i, relative offset of entry i), where i is how many entries
        have a timestamp < ``key`` (``count_keys_below``); the two fields are None when
        i == entries.

        Why one call: a lookup by time needs i and, in the common case, entry i's fields.
        Those are read as two ints from cached columns of the map (a struct call on the map
        converts every field of the entry, the position too)."""
        sample = self._key_sample
        if sample is None:
            if self.entries == 0:
                return 0, None, None
            sample = self._sample_keys()
        j = _bisect_left(sample, key)  # sample[j - 1] < key <= sample[j]
        high = j * KEY_SAMPLE_EVERY
        if high > self.entries:
            high = self.entries
        low = high - KEY_SAMPLE_EVERY + 1 if j else 0
        keys = self._columns[0]
        i = _bisect_left(keys, key, low if low > 0 else 0, high)
        if i == self.entries:
            return i, None, None
        relatives = self._columns.get("relative")
        if relatives is None:
            relatives = self._int32_column("relative", 2)
        return i, keys[i], relatives[i]

    def _int32_column(self, name: str, slot: int) -> memoryview:
        """Cache and return the int32 field at ``slot`` (of four per entry) as a column."""
        if self._map is None:
            self._map_sealed()
        with memoryview(self._map) as raw, raw.cast("i") as ints:
            column = self._columns[name] = ints[slot::4]
        return column

    def position(self, i: int) -> int:
        """Entry ``i``'s file position, read as a plain int from a cached int32 column of the
        map: no struct call and no tuple, twice per time lookup."""
        column = self._columns.get("position")
        if column is None:
            column = self._int32_column("position", 3)
        return column[i]


def check_consistent(
    offset_index: OffsetIndex,
    time_index: TimestampIndex,
    create_index: TimestampIndex,
    log_size: int,
) -> None:
    """Raise CorruptIndexError unless the three indexes are mutually and internally sound.

    Checks: whole entries only; equal entry counts; identical (relative offset, position) in
    all three; the first entry at relative offset 0, position 0; strictly increasing offsets and
    positions within the log; non-decreasing timestamps. Zero padding left by a crash, a
    truncated file or a file copied from another segment all fail at least one of these; the
    caller additionally checks the last entry against the batch header it points to.
    """
    for index in (offset_index, time_index, create_index):
        if index.is_torn:
            raise CorruptIndexError(f"{index.path.name}: length is not a whole number of entries")
    count = offset_index.entries
    if time_index.entries != count or create_index.entries != count:
        raise CorruptIndexError(
            f"entry counts differ: offset {count}, time {time_index.entries}, "
            f"create time {create_index.entries}"
        )
    if count == 0:
        return
    offsets = offset_index.to_numpy()
    times = time_index.to_numpy()
    creates = create_index.to_numpy()
    if offsets["relative_offset"][0] != 0 or offsets["position"][0] != 0:
        raise CorruptIndexError("first entry does not point at the segment start")
    for other in (times, creates):
        if not (
            np.array_equal(other["relative_offset"], offsets["relative_offset"])
            and np.array_equal(other["position"], offsets["position"])
        ):
            raise CorruptIndexError("indexes disagree on offsets or positions")
    if count > 1:
        if np.any(np.diff(offsets["relative_offset"]) <= 0) or np.any(
            np.diff(offsets["position"]) <= 0
        ):
            raise CorruptIndexError("offsets or positions do not increase")
        if np.any(np.diff(times["timestamp"]) < 0) or np.any(np.diff(creates["timestamp"]) < 0):
            raise CorruptIndexError("timestamps decrease")
    if offsets["position"][-1] >= log_size:
        raise CorruptIndexError("an entry points past the end of the log")
