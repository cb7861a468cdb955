"""A cleanly closed log whose index files came back with holes opens as a clean log: no
index rebuilt, no fsync. A one-batch segment's offset index is a single zero entry
(relative offset 0 at position 0), and a sparse copy (``cp --sparse=always``, ``rsync
-S``) or a file system that stores zero blocks as holes (ZFS with compression) keeps no
block of it; counted as missing, it had every such log rebuilt at its opening, with its
fsyncs. Counted, never timed."""

from __future__ import annotations

import os

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import ManualClock

pytestmark = pytest.mark.timeout(60)


def as_hole(path) -> None:
    """Replace an all-zero file by a hole of the same length (what a sparse copy makes)."""
    length = path.stat().st_size
    assert path.read_bytes() == bytes(length)
    path.unlink()
    with open(path, "wb") as file:
        file.truncate(length)
    with open(path, "rb") as file:
        assert os.lseek(file.fileno(), 0, os.SEEK_HOLE) == 0  # no block: a hole throughout


@pytest.fixture
def fsyncs(monkeypatch) -> list[int]:
    calls = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd))[1])
    return calls


@pytest.mark.parametrize("segments", [1, 3])
def test_a_clean_log_whose_zero_index_entry_is_a_hole_opens_without_a_rebuild(
        tmp_path, fsyncs, segments):
    clock = ManualClock(START_MS)
    log = open_log(tmp_path, clock, segment_bytes=400)
    appends = []
    for _ in range(segments):  # one batch a segment: each offset index is one zero entry
        clock.advance(5)
        appends.append(log.append(make_batch(3, value_size=60)))
    assert len(log.segments) == segments
    log.close()
    fsyncs.clear()
    control = open_log(tmp_path, clock, segment_bytes=400)  # the same clean open, no hole
    clean_open_fsyncs = len(fsyncs)  # its marker's removal
    control.close()
    indexes = sorted(tmp_path.glob("*.index"))
    assert len(indexes) == segments
    for index in indexes:
        as_hole(index)
    fsyncs.clear()

    log = open_log(tmp_path, clock, segment_bytes=400)
    try:
        report = log.recovery_report
        assert (report.clean_shutdown, report.indexes_rebuilt, report.segments_recovered) == (
            True, 0, 0)
        assert len(fsyncs) == clean_open_fsyncs
        assert [s.index_entries for s in log.segments] == [1] * segments
        assert len(read_all(log)) == 3 * segments
        for info in appends:  # each batch found by its own LAT
            found = log.offset_for_time(info.log_append_time)
            assert found.offset == info.base_offset
    finally:
        log.close()


def test_a_crashed_active_index_keeps_counting_only_what_lies_before_its_hole(tmp_path):
    """The untrimmed active index a crash leaves is sized to ``segment.index.bytes``: the
    hole after its entries is unreserved space, not entries, and is not written."""
    clock = ManualClock(START_MS)
    log = open_log(tmp_path, clock, index_interval_bytes=1)
    for _ in range(5):
        clock.advance(1)
        log.append(make_batch(1))
    log.close_handles()  # a crash: the index keeps its full size
    index = next(tmp_path.glob("*.index"))
    size = index.stat().st_size
    assert size > 4096
    log = open_log(tmp_path, clock, index_interval_bytes=1)
    try:
        assert log.active_segment.index_entries == 5
        with open(index, "rb") as file:  # the unreserved space was not written
            assert os.lseek(file.fileno(), 0, os.SEEK_HOLE) < size
        assert len(read_all(log)) == 5
    finally:
        log.close()
