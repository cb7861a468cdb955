"""Consumer-group lag in records and seconds, on real logs with a manual clock.

Definitions under test (broker/metrics/lag.py): records = HW - committed; age = now -
LAT(max(committed, log start)); span = LAT(HW - 1) - LAT(max(committed, log start)); all 0
when the group is at or past HW.
"""

from __future__ import annotations

from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.metrics.lag import log_append_time_at, partition_lag
from tslog.broker.storage import ManualClock

NOW = START_MS + 10_000  # the scrape's instant: 6 s after the last append


def lag(plog, committed, hw, now_ms=NOW):
    """(records, span seconds, age seconds) as the README lists the three gauges."""
    found = partition_lag(plog, committed, hw, now_ms)
    return found.records, found.span_seconds, found.age_seconds


def three_batches(tmp_path, **config):
    """Batches of 2, 3 and 4 records appended at START, START+1.5 s, START+4 s."""
    clock = ManualClock(START_MS)
    plog = open_log(tmp_path / "p", clock, **config)
    for count, at in ((2, START_MS), (3, START_MS + 1500), (4, START_MS + 4000)):
        clock.set(at)
        plog.append(make_batch(count, create_time=at))
    return plog, clock


def test_caught_up_and_past_the_end_lag_nothing(tmp_path):
    plog, _ = three_batches(tmp_path)
    hw = plog.log_end_offset
    assert hw == 9
    assert lag(plog, hw, hw) == (0, 0.0, 0.0)
    assert lag(plog, hw + 100, hw) == (0, 0.0, 0.0)
    plog.close()


def test_empty_log_lags_nothing(tmp_path):
    plog = open_log(tmp_path / "p")
    assert lag(plog, 0, plog.log_end_offset) == (0, 0.0, 0.0)
    plog.close()


def test_mid_log_lag_is_records_and_lat_difference(tmp_path):
    plog, _ = three_batches(tmp_path)
    hw = plog.log_end_offset
    # Offset 2 starts the second batch (LAT START+1.5 s); the newest is START+4 s.
    assert lag(plog, 2, hw) == (7, 2.5, 8.5)
    # Offset 3 is inside the second batch: it shares that batch's LAT.
    assert lag(plog, 3, hw) == (6, 2.5, 8.5)
    assert lag(plog, 0, hw) == (9, 4.0, 10.0)
    # In the last batch: records still owed, all appended at the same instant (no span), 6 s
    # before the scrape (the age).
    assert lag(plog, 8, hw) == (1, 0.0, 6.0)
    plog.close()


def test_lag_measures_to_the_high_watermark_not_the_log_end(tmp_path):
    plog, _ = three_batches(tmp_path)
    # A high watermark below the log end (a follower has not caught up): the newest readable
    # record is offset 4, the last of the second batch.
    assert lag(plog, 0, 5) == (5, 1.5, 10.0)
    plog.close()


def test_retention_past_the_committed_offset(tmp_path):
    # One batch per segment, so retention can delete the first two batches.
    plog, clock = three_batches(tmp_path, segment_bytes=240, retention_ms=10_000)
    assert len(plog.segments) == 3
    clock.set(START_MS + 1500 + 10_001)  # the first two segments are now too old
    deleted = plog.delete_old_segments()
    assert [d.base_offset for d in deleted] == [0, 2]
    assert plog.log_start_offset == 5
    hw = plog.log_end_offset
    # Committed at 1: records count everything from there (Kafka's definition), seconds run
    # from the oldest record still in the log (a lower bound: the deleted ones were older).
    assert lag(plog, 1, hw, START_MS + 12_000) == (8, 0.0, 8.0)
    clock.set(START_MS + 5000)
    plog.append(make_batch(1, create_time=START_MS + 5000))
    assert lag(plog, 1, plog.log_end_offset, START_MS + 12_000) == (9, 1.0, 8.0)
    plog.close()


def test_log_append_time_at_reads_the_batch_holding_the_offset(tmp_path):
    plog, _ = three_batches(tmp_path, segment_bytes=240)
    assert [log_append_time_at(plog, o) for o in range(9)] == (
        [START_MS] * 2 + [START_MS + 1500] * 3 + [START_MS + 4000] * 4)
    plog.close()


def test_the_age_grows_while_nothing_is_produced_and_the_span_does_not(tmp_path):
    plog, _ = three_batches(tmp_path)
    hw = plog.log_end_offset
    assert lag(plog, 6, hw, START_MS + 4000) == (3, 0.0, 0.0)  # inside the last batch
    assert lag(plog, 6, hw, START_MS + 7000) == (3, 0.0, 3.0)
    assert lag(plog, 6, hw, START_MS + 60_000) == (3, 0.0, 56.0)
    # A clock stepped back below the record's LAT: not a negative age.
    assert lag(plog, 6, hw, START_MS) == (3, 0.0, 0.0)
    plog.close()
