"""Reading and writing a segment's ``.log`` file by position: whole batches for recovery,
batch headers for lookups, and all-or-nothing appends.

Kept apart from ``segment.py`` (which decides *what* to read) because these are the only
places that touch the file's bytes; they take a descriptor and know nothing of indexes.
"""

from __future__ import annotations

import os
from typing import Iterator

from tslog.protocol.batch_header import (
    HEADER_SIZE,
    HEADER_STRUCT,
    BatchFormatError,
    BatchHeader,
    check_header,
    parse_header,
)

RECOVERY_CHUNK_BYTES = 8 << 20


def read_batches(fd: int, length: int,
                 start: int = 0) -> Iterator[tuple[int, BatchHeader | None, memoryview]]:
    """Yield (position, header, batch bytes) for each batch in [start, length); a header of
    None marks where the bytes stop making a batch."""
    position = start
    buffer = b""
    buffer_start = start
    while position < length:
        offset = position - buffer_start
        if offset + HEADER_SIZE > len(buffer):
            buffer = os.pread(fd, min(RECOVERY_CHUNK_BYTES, length - position), position)
            buffer_start, offset = position, 0
            if len(buffer) < HEADER_SIZE:
                yield position, None, memoryview(b"")
                return
        header = parse_header(buffer, offset)
        try:
            check_header(header, length - position)
        except BatchFormatError:
            yield position, None, memoryview(b"")
            return
        if offset + header.batch_length > len(buffer):
            buffer = os.pread(fd, max(RECOVERY_CHUNK_BYTES, header.batch_length), position)
            buffer_start, offset = position, 0
        with memoryview(buffer) as view:
            yield position, header, view[offset : offset + header.batch_length]
        position += header.batch_length


class HeaderWindow:
    """Reads batch headers forward through a region of the log, a window at a time.

    The first read takes one header: when batches are larger than the index interval that
    is all there is between two index entries. Later reads take one index interval plus a
    header, which by the indexing rule covers every header up to the next entry; more reads
    happen only if the index was built with a larger interval than the current one.
    """

    __slots__ = ("fd", "end", "interval", "buffer", "buffer_start", "want", "bytes_read")

    def __init__(self, fd: int, end: int, interval: int) -> None:
        self.fd = fd
        self.end = end
        self.interval = interval
        self.buffer = b""
        self.buffer_start = 0
        self.want = HEADER_SIZE
        self.bytes_read = 0

    def fields_at(self, position: int) -> tuple:
        offset = position - self.buffer_start
        if offset < 0 or offset + HEADER_SIZE > len(self.buffer):
            size = max(HEADER_SIZE, min(self.want, self.end - position))
            self.buffer = os.pread(self.fd, size, position)
            self.bytes_read += len(self.buffer)
            self.buffer_start, offset = position, 0
            self.want = self.interval + HEADER_SIZE
            if len(self.buffer) < HEADER_SIZE:
                raise BatchFormatError(f"torn batch header at position {position}")
        fields = HEADER_STRUCT.unpack_from(self.buffer, offset)
        if fields[3] < HEADER_SIZE:
            raise BatchFormatError(f"bad batch length {fields[3]} at position {position}")
        return fields


def write_fully(fd: int, parts, position: int, length: int) -> None:
    """pwritev all of ``parts`` or, on failure, cut the file back to ``position`` and raise."""
    try:
        written = os.pwritev(fd, parts, position)
        if written < length:  # rare (signals, full disk): finish with plain writes
            rest = memoryview(b"".join(parts))
            while written < length:
                written += os.pwrite(fd, rest[written:], position + written)
    except BaseException:
        os.ftruncate(fd, position)
        raise
