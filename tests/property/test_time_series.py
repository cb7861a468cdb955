"""Many times in one pass (``storage.time_series.offsets_for_times``) against a brute-force
scan, for several partition logs of random shapes and random sorted lists of times.

The answer for each time must be the first record whose time (LogAppendTime or CreateTime)
is >= it, exactly as one ``offset_for_time`` per time answers; and the pass must ask the
index no more often than there are distinct answers plus one (the skipping is the point).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.storage import START_MS, open_log
from tslog.broker.storage import ManualClock
from tslog.broker.storage.time_series import MAX_TIMES, TimeSeriesError, offsets_for_times
from tslog.protocol.records import build_batch

SPAN_MS = 5_000  # records' times fall within this much of START_MS

batches = st.lists(st.tuples(st.integers(1, 5),  # records in the batch
                             st.integers(0, 400),  # clock step before it (LAT)
                             st.lists(st.integers(-SPAN_MS, SPAN_MS), min_size=1, max_size=5)),
                   min_size=0, max_size=25)
partition_shape = st.fixed_dictionaries({
    "batches": batches,
    "segment_bytes": st.sampled_from([400, 1200, 1 << 20]),
    "index_interval_bytes": st.sampled_from([0, 150, 4096]),
})


def _fill(directory: Path, shape: dict) -> list:
    """Append the shape's batches; [(offset, LAT, CreateTime)] of every record."""
    clock = ManualClock(START_MS)
    log = open_log(directory, clock, segment_bytes=shape["segment_bytes"],
                   index_interval_bytes=shape["index_interval_bytes"])
    records = []
    for count, step, skews in shape["batches"]:
        clock.advance(step)
        create_times = [START_MS + skews[i % len(skews)] for i in range(count)]
        info = log.append(build_batch([b"v"] * count, create_times=create_times))
        records += [(info.base_offset + i, info.log_append_time, ct)
                    for i, ct in enumerate(create_times)]
    return log, records


def _first_at_or_after(records: list, column: int, target: int):
    return next(((r[0], r[column]) for r in records if r[column] >= target), None)


def _times(data, records: list, column: int) -> list:
    """Sorted times, most of them at, just before or just after a record's time (where an
    answer changes), some anywhere."""
    near = sorted({r[column] + d for r in records for d in (-1, 0, 1)}) or [START_MS]
    anywhere = st.integers(START_MS - SPAN_MS - 10, START_MS + 2 * SPAN_MS + 10)
    return sorted(data.draw(st.lists(st.sampled_from(near) | anywhere, max_size=40)))


@settings(max_examples=40, deadline=None)
@given(partitions=st.lists(partition_shape, min_size=1, max_size=3),
       timestamp_type=st.sampled_from(["append", "create"]), data=st.data())
def test_every_time_of_every_partition_matches_a_scan(partitions, timestamp_type, data):
    root = Path(tempfile.mkdtemp(prefix="tslog-times-"))
    column = 1 if timestamp_type == "append" else 2
    try:
        for number, shape in enumerate(partitions):
            log, records = _fill(root / f"t-{number}", shape)
            try:
                times = _times(data, records, column)
                answers, lookups = offsets_for_times(log, times, timestamp_type)
                expected = [_first_at_or_after(records, column, t) for t in times]
                assert [tuple(a) if a else None for a in answers] == expected
                assert answers == [log.offset_for_time(t, timestamp_type) for t in times]
                distinct = {a for a in answers}
                assert lookups <= len(distinct) + 1
            finally:
                log.close_handles()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("times", [[5, 3], [-1, 4], list(range(MAX_TIMES + 1))])
def test_unsorted_negative_or_too_many_times_are_refused(tmp_path, times):
    log, _ = _fill(tmp_path / "t-0", {"batches": [(2, 1, [0])], "segment_bytes": 1 << 20,
                                       "index_interval_bytes": 4096})
    try:
        with pytest.raises(TimeSeriesError):
            offsets_for_times(log, times)
    finally:
        log.close_handles()
