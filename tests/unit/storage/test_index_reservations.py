"""An index entry is never the first write to its page: every page a reservation hands
out was written (with zeros) by ``pwrite`` first.

Why it matters: a first write through a shared map to a page the page cache lacks faults in
a large folio over the file's reserved and sparse pages alike; on Linux 6.18 with ext4 that
fault stalled the broker's event loop (appends run there) for tens of milliseconds, once
per index at its second page. A page written first is in the page cache and faults at once.
The guard counts holes (``SEEK_HOLE``: a reserved but never written page is one on ext4),
not time.
"""

from __future__ import annotations

import os

import pytest

from tslog.broker.storage.index import OffsetIndex, TimestampIndex

pytestmark = pytest.mark.timeout(60)

PAGE = os.sysconf("SC_PAGE_SIZE")


def unwritten_pages_ahead(path, entry_bytes: int, entries: int) -> bool:
    """True if the page that will hold the next entry is a hole (not yet written)."""
    at = entries * entry_bytes
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, at, os.SEEK_HOLE) < min(at + entry_bytes, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def open_writable(kind, path, spare: bool):
    """An active segment's index, made as a log makes it: sized and mapped when the
    segment starts (``make_writable``), or a next segment's made ahead (``spare``)."""
    if spare:
        kind.make_spare_file(path, 64 * PAGE)
        return kind(path, spare=True)
    index = kind(path)
    index.make_writable(64 * PAGE)
    return index


@pytest.mark.parametrize("spare", [False, True], ids=["made-at-roll", "spare"])
@pytest.mark.parametrize("kind", [OffsetIndex, TimestampIndex])
def test_each_reserved_page_is_written_before_an_entry_goes_there(tmp_path, kind, spare):
    path = tmp_path / "0.index"
    index = open_writable(kind, path, spare)
    fields = (0, 0) if kind is OffsetIndex else (0, 0, 0)
    holes = 0
    for n in range(16 * PAGE // kind.ENTRY.size):  # 16 pages: reserved 1, 1, 2, 4, 8 at a time
        index.reserve_entry()
        holes += unwritten_pages_ahead(path, kind.ENTRY.size, index.entries)
        index.append(*(field + n for field in fields))
    assert holes == 0
    index.seal()
    assert [index.entry(i)[0] for i in (0, 1, index.entries - 1)] == [0, 1, index.entries - 1]
    index.close()
