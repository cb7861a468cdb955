"""Recovery costs the unflushed tail: it starts at the recovery point (inside its segment,
from the last index entry before it), moves the point to the log end once it has validated
and synced the tail, and so a crash loop never re-reads what an earlier recovery checked.

Method: write a log, crash it (``close_handles``: the state a SIGKILL leaves), reopen, and
read ``RecoveryReport.bytes_scanned`` (what recovery re-read) and the checkpoint file; the
data must be exactly what was appended, and indexes equal to ones written by appends.
"""

import os
import shutil

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import ManualClock, OffsetAndTimestamp
from tslog.broker.storage.recovery import read_checkpoint

CONFIG = dict(segment_bytes=1 << 20, index_interval_bytes=300)


def append_batches(log, clock, count, records=3):
    appends = []
    for _ in range(count):
        clock.advance(1)
        appends.append(log.append(make_batch(records)))
    return appends


def assert_holds(log, appends):
    expected = [o for a in appends for o in range(a.base_offset, a.last_offset + 1)]
    assert [r.offset for r in read_all(log)] == expected
    for a in appends:
        assert log.offset_for_time(a.log_append_time) == OffsetAndTimestamp(
            a.base_offset, a.log_append_time)


def test_recovery_rereads_only_the_tail_after_the_recovery_point(tmp_path):
    clock = ManualClock(START_MS)
    log = open_log(tmp_path / "t-0", clock, **CONFIG)
    flushed = append_batches(log, clock, 200)
    log.checkpoint()  # flushes, then writes the point: everything so far is durable
    tail = append_batches(log, clock, 5)
    tail_bytes = log.active_segment.size - log.active_segment.position_of(tail[0].base_offset)
    log.close_handles()
    with open_log(tmp_path / "t-0", clock, **CONFIG) as reopened:
        report = reopened.recovery_report
        assert len(reopened.segments) == 1 and report.segments_recovered == 1
        # The tail, plus at most the batches since the last index entry before the point.
        assert tail_bytes <= report.bytes_scanned <= tail_bytes + 300 + 2 * len(make_batch(3))
        assert report.recovery_point == flushed[-1].last_offset + 1
        assert reopened.recovery_point == reopened.log_end_offset
        assert_holds(reopened, flushed + tail)


def test_a_crash_loop_rereads_only_what_came_since_the_last_open(tmp_path):
    clock = ManualClock(START_MS)
    appends = []
    log = open_log(tmp_path / "t-0", clock, **CONFIG)
    appends += append_batches(log, clock, 300)
    log.close_handles()  # nothing flushed, no checkpoint: the first open checks it all
    scanned = []
    for _ in range(6):
        log = open_log(tmp_path / "t-0", clock, **CONFIG)
        scanned.append(log.recovery_report.bytes_scanned)
        assert read_checkpoint(tmp_path / "t-0")[0] == log.log_end_offset
        assert_holds(log, appends)
        appends += append_batches(log, clock, 4)
        log.close_handles()
    first, later = scanned[0], scanned[1:]
    assert first == 300 * len(make_batch(3))
    assert max(later) < first / 20  # 4 batches (+ one index interval), not the whole log
    assert max(later) - min(later) <= 300 + len(make_batch(3))  # and not growing


def test_recovery_point_in_a_sealed_segment_rereads_from_there(tmp_path):
    clock = ManualClock(START_MS)
    config = dict(CONFIG, segment_bytes=20_000)
    log = open_log(tmp_path / "t-0", clock, **config)
    appends = append_batches(log, clock, 40)
    log.checkpoint()
    appends += append_batches(log, clock, 400)  # several segments after the point
    assert len(log.segments) > 4
    size = log.size_bytes
    log.close_handles()
    with open_log(tmp_path / "t-0", clock, **config) as reopened:
        report = reopened.recovery_report
        assert report.segments_recovered == len(reopened.segments)  # the point is in the first
        assert size - report.bytes_scanned >= 40 * len(make_batch(3)) - 300 - len(make_batch(3))
        assert_holds(reopened, appends)


def test_trusted_index_entries_that_fail_checks_are_rebuilt_from_the_log(tmp_path):
    clock = ManualClock(START_MS)
    log = open_log(tmp_path / "t-0", clock, **CONFIG)
    appends = append_batches(log, clock, 100)
    log.checkpoint()
    appends += append_batches(log, clock, 3)
    log.close_handles()
    shutil.copytree(tmp_path / "t-0", tmp_path / "pristine")
    index = tmp_path / "t-0" / ("%020d.timeindex" % 0)
    with open(index, "r+b") as handle:  # an entry in the middle points elsewhere
        handle.seek(16 * 10 + 12)
        handle.write((123).to_bytes(4, "little"))
    with open_log(tmp_path / "t-0", clock, **CONFIG) as reopened:
        assert reopened.recovery_report.bytes_scanned == reopened.size_bytes  # all of it
        assert_holds(reopened, appends)
    with open_log(tmp_path / "pristine", clock, **CONFIG):
        pass
    for suffix in (".index", ".timeindex", ".ctindex"):  # identical to the appends' entries
        rebuilt = (tmp_path / "t-0" / ("%020d" % 0 + suffix)).read_bytes()
        original = (tmp_path / "pristine" / ("%020d" % 0 + suffix)).read_bytes()
        assert rebuilt == original


def test_partial_recovery_writes_the_same_indexes_as_appends(tmp_path):
    clock = ManualClock(START_MS)
    config = dict(CONFIG, index_interval_bytes=500)
    log = open_log(tmp_path / "t-0", clock, **config)
    sizes = [1, 7, 2, 30, 1, 1, 12, 3] * 15
    appends = []
    for i, records in enumerate(sizes):
        clock.advance(1)
        appends.append(log.append(make_batch(records)))
        if i == 60:
            log.checkpoint()
    log.close_handles()
    shutil.copytree(tmp_path / "t-0", tmp_path / "crashed")
    with open_log(tmp_path / "t-0", clock, **config) as reopened:  # partial
        assert reopened.recovery_report.bytes_scanned < reopened.size_bytes / 2
        assert_holds(reopened, appends)
    os.unlink(tmp_path / "crashed" / "recovery-point")
    with open_log(tmp_path / "crashed", clock, **config) as full:  # from the first byte
        assert full.recovery_report.bytes_scanned == full.size_bytes
    for suffix in (".index", ".timeindex", ".ctindex"):
        name = "%020d" % 0 + suffix
        assert (tmp_path / "t-0" / name).read_bytes() == (tmp_path / "crashed" / name).read_bytes()


def test_a_clean_open_writes_no_checkpoint_and_scans_nothing(tmp_path):
    clock = ManualClock(START_MS)
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        append_batches(log, clock, 10)
    before = os.stat(tmp_path / "t-0" / "recovery-point").st_mtime_ns
    with open_log(tmp_path / "t-0", clock, **CONFIG) as log:
        assert log.recovery_report.bytes_scanned == 0
        assert os.stat(tmp_path / "t-0" / "recovery-point").st_mtime_ns == before


def test_a_zeroed_first_index_entry_is_not_trusted(tmp_path):
    """A zeroed entry 0 (offset 0, position 0, time 0) agrees with the other indexes; it must
    still be caught by comparing it with the first batch, or lookups by time go wrong."""
    clock = ManualClock(START_MS)
    for suffix in (".timeindex", ".ctindex"):
        directory = tmp_path / suffix.strip(".")
        log = open_log(directory, clock, **CONFIG)
        appends = append_batches(log, clock, 1)
        log.checkpoint()
        log.close_handles()
        index = directory / ("%020d" % 0 + suffix)
        index.write_bytes(bytes(index.stat().st_size))
        with open_log(directory, clock, **CONFIG) as reopened:
            assert reopened.recovery_report.bytes_scanned == reopened.size_bytes
            assert_holds(reopened, appends)
            assert reopened.offset_for_time(START_MS - 10_000, "create") == OffsetAndTimestamp(
                0, START_MS)


def test_a_log_shorter_than_its_recovery_point_is_validated_whole(tmp_path):
    """A file cut below what the checkpoint says was flushed (a damaged disk, not a crash):
    recovery keeps what still validates instead of failing on a short header read."""
    clock = ManualClock(START_MS)
    log = open_log(tmp_path / "t-0", clock, **CONFIG)
    appends = append_batches(log, clock, 50)
    log.checkpoint()
    log.close_handles()
    entries = (tmp_path / "t-0" / ("%020d.index" % 0)).read_bytes()
    last = max(i for i in range(0, len(entries), 8) if any(entries[i : i + 8]))
    position = int.from_bytes(entries[last + 4 : last + 8], "little")  # the last entry's batch
    kept = [a for a in appends if log_position(appends, a) < position]
    os.truncate(tmp_path / "t-0" / ("%020d.log" % 0), position + 41)  # inside its header
    with open_log(tmp_path / "t-0", clock, **CONFIG) as reopened:
        assert reopened.recovery_report.bytes_truncated == 41
        assert reopened.log_end_offset == kept[-1].last_offset + 1
        assert_holds(reopened, kept)
        assert reopened.recovery_point == reopened.log_end_offset


def log_position(appends, append):
    """Where ``append``'s batch starts (every batch here has the same size)."""
    return appends.index(append) * len(make_batch(3))
