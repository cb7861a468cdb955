"""How many reads of the log a lookup by time makes when batches are smaller than the index
interval (the usual case for small producers): the index names every fourth or so batch, so
a lookup between two entries must read the headers between them. Once the segment knows the
interval holds several batches, that is one read (about: see below); counted by wrapping ``os.pread``."""

import os

from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.storage import ManualClock


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
