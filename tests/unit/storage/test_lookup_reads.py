"""How many reads of the log a lookup by time makes when batches are smaller than the index
interval (the usual case for small producers): the index names every fourth or so batch, so
a lookup between two entries must read the headers between them. Once the segment knows the
interval holds several batches, that is one read (about: see below); counted by wrapping ``os.pread``."""

import os

import pytest

from tests.helpers.python_calls import calls_by_name
from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.storage import MAX_TIMESTAMP, ManualClock
from tslog.protocol.batch_header import COMPRESSION_NONE, COMPRESSION_ZSTD
from tslog.protocol.records import build_batch


def test_a_lookup_between_index_entries_reads_the_log_once(tmp_path, monkeypatch):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=4096) as log:
        times = []
        for _ in range(400):  # batches of about 200 bytes: about 20 between two entries
            times.append(log.append(make_batch(5, value_size=20)).log_append_time)
            clock.advance(1)
        expected = {t: log.offset_for_time(t) for t in times}  # this pass learns the intervals
        reads = []
        real_pread = os.pread
        monkeypatch.setattr(os, "pread", lambda *a: (reads.append(a[1]), real_pread(*a))[1])
        for t in times:
            assert log.offset_for_time(t) == expected[t]
        monkeypatch.undo()
    # One read per lookup, a second only when the headers run past an interval's read
    # and past the last index entry (a read of one header first there); two each before.
    assert len(reads) < 1.1 * len(times), len(reads)
    assert max(reads) <= 4096 + 80  # of at most an index interval and a header
    assert expected[times[7]].offset == 35 and expected[times[7]].timestamp == times[7]


@pytest.mark.parametrize("compression", [COMPRESSION_NONE, COMPRESSION_ZSTD])
def test_a_lookup_by_create_time_that_lands_on_a_batchs_first_record_reads_only_headers(
        tmp_path, monkeypatch, compression):
    """The first record's CreateTime is in the batch header (checked on append), so a lookup
    whose answer is a batch's first record decodes no records: the reads are headers only.
    A lookup inside a batch reads that batch's CreateTime column (8 bytes a record), or the
    whole batch once when it is compressed."""
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=0) as log:
        for i in range(50):  # CreateTimes 0, 10, ..., 40 after START_MS + 100 * i
            log.append(build_batch([os.urandom(200)] * 5, compression=compression,
                                   create_times=[START_MS + 100 * i + 10 * k for k in range(5)]))
            clock.advance(1)
        reads = []
        real_pread = os.pread
        monkeypatch.setattr(os, "pread", lambda *a: (reads.append(a[1]), real_pread(*a))[1])
        for i in range(50):
            found = log.offset_for_time(START_MS + 100 * i - 50, "create")
            assert tuple(found) == (5 * i, START_MS + 100 * i)
        assert max(reads) < 200  # headers, never a batch of five 200-byte values
        reads.clear()
        found = log.offset_for_time(START_MS + 100 * 7 + 25, "create")
        assert tuple(found) == (5 * 7 + 3, START_MS + 100 * 7 + 30)
        if compression == COMPRESSION_NONE:
            assert reads[-1] == 5 * 8  # the column, read to find the fourth record
        else:
            assert reads[-1] > 200  # the compressed batch, read whole


# Python calls of a warm lookup by LogAppendTime in a sealed segment: ``offset_for_time``
# itself, the bisect over segments (``by_log_append_time``), the LRU touch, the segment's
# answer, the index's search (seven before the search and the bisect were written out). Each
# call is several hundred instructions of a lookup's total: a new layer shows here first.
LOOKUP_PYTHON_CALLS_MAX = 5


def test_a_warm_lookup_by_time_makes_five_python_calls_and_no_system_call(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=0, segment_bytes=4096) as log:
        appends = []
        for _ in range(200):  # one index entry a batch, about 13 batches a segment
            appends.append(log.append(make_batch(3, value_size=100)))
            clock.advance(1)
        assert len(log.segments) > 10
        for a in appends:  # warm: every segment read once
            log.offset_for_time(a.log_append_time)
        for a in appends[:-20:3]:  # in sealed segments, their first batches too
            calls, found = calls_by_name(lambda: log.offset_for_time(a.log_append_time))
            assert tuple(found) == (a.base_offset, a.log_append_time)
            assert calls["python"] <= LOOKUP_PYTHON_CALLS_MAX, calls
            assert not {"pread", "open", "mmap", "read"} & set(calls), calls


def test_the_largest_time_is_answered_without_reading_the_log(tmp_path, monkeypatch):
    """MAX_TIMESTAMP (a console asks it of every partition) lands after the last index entry,
    where a lookup would read the headers of the whole interval: once the log knows the
    answer (an append raised the largest time, or one lookup found it) it reads nothing.
    Batches sharing the largest time keep the first of them as the answer, and a reopened
    log finds it again by one lookup."""
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=4096) as log:
        for _ in range(30):
            log.append(make_batch(5, value_size=20))
            clock.advance(1)
        log.append(make_batch(5, value_size=20))  # the same time as the next one
        log.append(make_batch(5, value_size=20))
        newest = (150, START_MS + 30)
        reads = []
        real_pread = os.pread
        monkeypatch.setattr(os, "pread", lambda *a: (reads.append(a[1]), real_pread(*a))[1])
        for _ in range(3):
            assert tuple(log.offset_for_time(MAX_TIMESTAMP)) == newest
        assert reads == []
        monkeypatch.undo()
    with open_log(tmp_path / "t-0", clock, index_interval_bytes=4096) as log:
        monkeypatch.setattr(os, "pread", lambda *a: (reads.append(a[1]), real_pread(*a))[1])
        assert tuple(log.offset_for_time(MAX_TIMESTAMP)) == newest
        found_by_lookup = len(reads)
        assert tuple(log.offset_for_time(MAX_TIMESTAMP)) == newest
        assert found_by_lookup > 0 and len(reads) == found_by_lookup
