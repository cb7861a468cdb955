"""Loading a segment from disk, and recovering it (``Segment``'s ``LoadMixin``).

A trusted segment (below the recovery point, or closed cleanly) is loaded from its indexes:
they are checked against each other and against the batches their first and last entries
point at, then the short unindexed tail is read. Recovery re-reads every batch, checks its
header, CRC, records, offset continuity and LogAppendTime order, rebuilds the indexes, and
cuts the file after the last good batch. Given the log's recovery point, it trusts the index
entries of the batches before it (their log bytes were fsynced, and so were the entries, by
the checkpoint that wrote that point) when they pass the same checks, and re-reads only from
the last such batch on: recovery costs the unflushed tail, not the segment.
"""

from __future__ import annotations

import os

from tslog.protocol.batch_header import (
    HEADER_SIZE,
    BatchFormatError,
    BatchHeader,
    check_records,
    verify_crc,
)

from .batch_io import read_batches
from .errors import CorruptIndexError
from .index import check_consistent

NO_CREATE_TIME = -(2**63)


class LoadMixin:
    """``Segment``'s loading and recovery (they use its indexes, log descriptor and summary)."""

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
