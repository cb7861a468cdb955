"""File maps that hold no descriptor: the C library's ``mmap`` through ctypes.

Why: a mapping outlives the descriptor it was made from, so an index map needs no descriptor
once made. CPython 3.11's ``mmap.mmap`` keeps a duplicate of the descriptor for as long as the
map lives (3.13's ``trackfd=False`` drops it), which made every mapped index file cost a
descriptor: seven per active segment, four per open sealed one, and a partition count or a
log length that descriptors could not follow. A map made here costs none, so index files are
opened, mapped and closed at once, and only the budget of maps (``vm.max_map_count``) bounds
how many stay mapped (``handles.HandleBudget``).

Where the C library's ``mmap`` cannot be called (no ctypes, not a POSIX libc), Python's
``mmap`` is used instead, with its descriptor.

Safety: ``FileMap.buffer`` is a memoryview over memory the map owns. ``close`` unmaps it; a
view made from ``buffer`` that outlived ``close`` would read unmapped memory, so an owner
releases every view it made before closing (``index.MmapIndex._unmap`` does), exactly as
Python's ``mmap`` insists (it raises BufferError there).
"""

from __future__ import annotations

import ctypes
import mmap
import os

_PROT_READ, _PROT_WRITE = mmap.PROT_READ, mmap.PROT_WRITE
_MAP_SHARED = mmap.MAP_SHARED


def _libc_mmap():
    """(mmap, munmap) of the C library, or None where they cannot be called."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        map_, unmap = libc.mmap, libc.munmap
    except (OSError, AttributeError):
        return None
    map_.restype = ctypes.c_void_p
    map_.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                     ctypes.c_int, ctypes.c_long)
    unmap.restype = ctypes.c_int
    unmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    return map_, unmap


_LIBC = _libc_mmap()
_MAP_FAILED = ctypes.c_void_p(-1).value

maps_made = 0  # every map made in this process: tests count them (no map per warm lookup)


class FileMap:
    """``length`` bytes of a file, shared, read-only or read-write; ``buffer`` is a byte
    memoryview of them."""

    __slots__ = ("buffer", "length", "_address", "_mmap")

    def __init__(self, fd: int, length: int, writable: bool) -> None:
        global maps_made
        self.length = length
        self._address = None
        self._mmap = None
        if _LIBC is None:
            self._mmap = mmap.mmap(fd, length,
                                   access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ)
            self.buffer = memoryview(self._mmap)
        else:
            protection = _PROT_READ | (_PROT_WRITE if writable else 0)
            address = _LIBC[0](None, length, protection, _MAP_SHARED, fd, 0)
            if address in (None, _MAP_FAILED):
                error = ctypes.get_errno()
                raise OSError(error, f"mmap of {length} bytes: {os.strerror(error)}")
            self._address = address
            raw = memoryview((ctypes.c_char * length).from_address(address)).cast("B")
            self.buffer = raw if writable else raw.toreadonly()
        maps_made += 1

    def close(self) -> None:
        """Unmap (idempotent). Every view made from ``buffer`` must be released first."""
        self.buffer.release()
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        elif self._address is not None:
            _LIBC[1](self._address, self.length)
            self._address = None


def map_file(path, length: int, writable: bool) -> FileMap:
    """Open ``path``, map its first ``length`` bytes and close it again."""
    fd = os.open(path, os.O_RDWR if writable else os.O_RDONLY)
    try:
        return FileMap(fd, length, writable)
    finally:
        os.close(fd)
