"""Sealed segments hold no files until read, and at most ``OPEN_SEALED_SEGMENTS_MAX`` of them
per log hold any (``handles.py``): descriptors scale with the active segment, not the log.

Method: count this process's descriptors (/proc/self/fd) around a log of many segments while
reading, looking up, rolling, truncating, deleting and flushing across all of them; every
answer must equal the one from appends.
"""

import gc
import os

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import ManualClock, OffsetAndTimestamp
from tslog.broker.storage.handles import OPEN_SEALED_SEGMENTS_MAX, OpenSegments

CONFIG = dict(segment_bytes=2000, index_interval_bytes=300)
HANDLES_PER_SEGMENT = 4  # sealed: the .log descriptor and three index maps (each holds one)
HANDLES_ACTIVE = 7  # the active segment's writable indexes keep their descriptors too

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def collected():
    """Objects an earlier test left for the cycle collector close their files now, not in
    the middle of a count."""
    gc.collect()


def build(directory, clock, batches=400):
    log = open_log(directory, clock, **CONFIG)
    appends = []
    for i in range(batches):
        clock.advance(1)
        appends.append(log.append(make_batch(1 + i % 5)))
    return log, appends


def bound():
    return OPEN_SEALED_SEGMENTS_MAX * HANDLES_PER_SEGMENT + HANDLES_ACTIVE + 1


def test_descriptors_stay_bounded_while_every_segment_is_read(tmp_path):
    clock = ManualClock(START_MS)
    baseline = descriptors()
    log, appends = build(tmp_path / "t-0", clock)
    assert len(log.segments) >= 5 * OPEN_SEALED_SEGMENTS_MAX
    assert descriptors() - baseline <= bound()  # rolled segments were released as it grew
    log.close()
    log = open_log(tmp_path / "t-0", clock, **CONFIG)
    assert descriptors() - baseline <= HANDLES_ACTIVE + 1  # just the active segment
    expected = [o for a in appends for o in range(a.base_offset, a.last_offset + 1)]
    assert [r.offset for r in read_all(log)] == expected
    assert descriptors() - baseline <= bound()
    for a in reversed(appends):  # by time, newest to oldest: every segment again
        assert log.offset_for_time(a.log_append_time) == OffsetAndTimestamp(
            a.base_offset, a.log_append_time)
        assert log.offset_for_time(START_MS, "create") == OffsetAndTimestamp(0, START_MS)
    assert descriptors() - baseline <= bound()
    log.close()
    assert descriptors() == baseline


def test_truncation_retention_and_flush_reach_released_segments(tmp_path):
    clock = ManualClock(START_MS)
    baseline = descriptors()
    log, appends = build(tmp_path / "t-0", clock)
    middle = appends[len(appends) // 2]
    assert log.truncate_to(middle.base_offset) > 0  # into a sealed, released segment
    assert log.log_end_offset == middle.base_offset
    clock.advance(1)
    again = log.append(make_batch(2))
    assert again.base_offset == middle.base_offset
    log.flush()  # the segments rolled since the last flush may be released: synced by path
    log.config = log.config.__class__(**{**log.config.__dict__, "retention_bytes": 5000})
    deleted = log.delete_old_segments()
    assert deleted and log.log_start_offset == deleted[-1].next_offset
    kept = [a for a in appends if log.log_start_offset <= a.base_offset < middle.base_offset]
    expected = [o for a in kept for o in range(a.base_offset, a.last_offset + 1)]
    assert [r.offset for r in read_all(log)][: len(expected)] == expected
    assert descriptors() - baseline <= bound()
    log.close()
    assert descriptors() == baseline


def test_the_lru_releases_least_recently_read_first():
    released = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def release(self):
            released.append(self.name)

    handles = OpenSegments(limit=2)
    a, b, c, d = (Fake(n) for n in "abcd")
    handles.opened(a)
    handles.opened(b)
    handles.touch(a)
    handles.opened(c)  # b is the least recently read
    assert released == ["b"] and len(handles) == 2
    handles.discard(a)
    handles.opened(d)
    assert released == ["b"]
    assert handles.release_idle() == 2 and sorted(released) == ["b", "c", "d"]
