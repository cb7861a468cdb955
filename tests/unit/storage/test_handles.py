"""Sealed segments keep their files open within a budget shared by the broker's logs
(``handles.py``), and an index map holds no descriptor (``maps.py``).

Method: count this process's descriptors (/proc/self/fd), its ``os.open`` calls (wrapped,
passing through) and the maps the storage made (``maps.maps_made``) around logs of many
segments while reading, looking up, rolling, truncating, deleting and flushing across all of
them; every answer must equal the one from appends. The guard of the lookup headline: once
warm, lookups anywhere in a log of 1,000 sealed segments open and map nothing.
"""

import gc
import os
import random

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import ManualClock, OffsetAndTimestamp, maps
from tslog.broker.storage.handles import HandleBudget, OpenSegments

CONFIG = dict(segment_bytes=2000, index_interval_bytes=300)
SMALL = 8  # sealed segments a log may keep open in the bounded cases
OWN = 2  # descriptors besides sealed segments: the active segment's .log and the lock

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def small_budget() -> HandleBudget:
    return HandleBudget(open_files=SMALL, index_maps=3 * SMALL)


@pytest.fixture(autouse=True)
def collected():
    """Objects an earlier test left for the cycle collector close their files now, not in
    the middle of a count."""
    gc.collect()


def build(directory, clock, batches=400, budget=None, **config):
    log = open_log(directory, clock, budget=budget or small_budget(), **{**CONFIG, **config})
    appends = []
    for i in range(batches):
        clock.advance(1)
        appends.append(log.append(make_batch(1 + i % 5)))
    return log, appends


class CountedOpens:
    """``os.open`` wrapped: every call still opens, and is counted."""

    def __init__(self, monkeypatch):
        self.calls = 0
        real = os.open

        def counted(*args, **kwargs):
            self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(os, "open", counted)


def test_descriptors_stay_within_the_budget_while_every_segment_is_read(tmp_path):
    clock = ManualClock(START_MS)
    baseline = descriptors()
    log, appends = build(tmp_path / "t-0", clock)
    assert len(log.segments) >= 5 * SMALL
    assert descriptors() - baseline <= SMALL + OWN  # rolled segments were released as it grew
    log.close()
    log = open_log(tmp_path / "t-0", clock, budget=small_budget(), **CONFIG)
    assert descriptors() - baseline == OWN  # just the active segment (its maps hold none)
    expected = [o for a in appends for o in range(a.base_offset, a.last_offset + 1)]
    assert [r.offset for r in read_all(log)] == expected
    assert descriptors() - baseline <= SMALL + OWN
    for a in reversed(appends):  # by time, newest to oldest: every segment again
        assert log.offset_for_time(a.log_append_time) == OffsetAndTimestamp(
            a.base_offset, a.log_append_time)
        assert log.offset_for_time(START_MS, "create") == OffsetAndTimestamp(0, START_MS)
    assert descriptors() - baseline <= SMALL + OWN
    log.close()
    assert descriptors() == baseline


def test_warm_lookups_across_a_thousand_sealed_segments_open_and_map_nothing(
        tmp_path, monkeypatch):
    clock = ManualClock(START_MS)
    budget = HandleBudget(open_files=2500, index_maps=7500)
    baseline = descriptors()
    log, appends = build(tmp_path / "t-0", clock, batches=1300, budget=budget,
                         segment_bytes=330, index_interval_bytes=100)
    sealed = len(log.segments) - 1
    assert sealed >= 1000
    for a in appends:  # warm-up: every segment read once
        assert log.offset_for_time(a.log_append_time).offset == a.base_offset
    opens, maps_before = CountedOpens(monkeypatch), maps.maps_made
    rng = random.Random(37)
    for _ in range(10_000):
        a = rng.choice(appends)
        assert log.offset_for_time(a.log_append_time) == OffsetAndTimestamp(
            a.base_offset, a.log_append_time)
        assert log.read(a.base_offset, max_bytes=1)[:8] == a.base_offset.to_bytes(8, "little")
    assert opens.calls == 0 and maps.maps_made == maps_before
    assert descriptors() - baseline <= min(sealed, budget.open_files) + OWN
    monkeypatch.undo()
    log.close()
    assert descriptors() == baseline


def test_beyond_its_share_a_log_reopens_and_stays_within_it(tmp_path, monkeypatch):
    clock = ManualClock(START_MS)
    baseline = descriptors()
    log, appends = build(tmp_path / "t-0", clock)
    opens, maps_before = CountedOpens(monkeypatch), maps.maps_made
    for a in appends:
        assert log.offset_for_time(a.log_append_time).offset == a.base_offset
    assert opens.calls > 0 and maps.maps_made > maps_before  # more segments than its share
    assert descriptors() - baseline <= SMALL + OWN
    monkeypatch.undo()
    log.close()


def test_the_budget_is_shared_evenly_by_the_open_logs(tmp_path):
    budget = HandleBudget(open_files=12, index_maps=1000)
    first = open_log(tmp_path / "t-0", budget=budget)
    assert budget.per_log == 12
    second = open_log(tmp_path / "t-1", budget=budget)
    assert budget.per_log == 6
    second.close()
    assert budget.per_log == 12
    assert HandleBudget(open_files=1000, index_maps=30).per_log == 10  # three maps a segment
    first.close()
    assert budget.logs == 0


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
    assert descriptors() - baseline <= SMALL + OWN
    log.close()
    assert descriptors() == baseline


def test_the_lru_releases_least_recently_read_first():
    released = []

    class Fake:
        def __init__(self, name):
            self.name = name

        def release(self):
            released.append(self.name)

    budget = HandleBudget(open_files=2, index_maps=6)
    budget.join()
    handles = OpenSegments(budget)
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
