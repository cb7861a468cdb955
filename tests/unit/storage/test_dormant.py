"""A dormant log (closed cleanly, opened at its first use): it opens no file until then,
answers every read and write as an opened log does, and what it tells without opening (the
facts metrics, DescribeLogDirs and retention read) matches what the opened log says.
Counted (files opened, maps made), never timed; the facts against the opened log as oracle."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.storage import START_MS, make_batch, read_all
from tslog.broker.storage import LogConfig, ManualClock, PartitionLog, dir_lock, files, maps
from tslog.broker.storage.log import MANY_MARKERS, sync_marker_removals

SMALL_SEGMENTS = {"segment.bytes": "600"}


def written(directory, batches: int, start: int = 0, **settings_) -> list:
    """Close a log of ``batches`` three-record batches cleanly; return its records."""
    clock = ManualClock(START_MS)
    config = LogConfig.from_mapping({**SMALL_SEGMENTS, **settings_})
    with PartitionLog(directory, config, clock) as plog:
        for _ in range(batches):
            plog.append(make_batch(3))
            clock.advance(10)
        if start:
            plog.delete_records_before(start)
        return read_all(plog)


def dormant(directory, clock=None, **settings_) -> PartitionLog:
    config = LogConfig.from_mapping({**SMALL_SEGMENTS, **settings_})
    return PartitionLog(directory, config, clock or ManualClock(START_MS + 10**6), dormant=True)


def test_a_dormant_log_opens_nothing_until_its_first_use(tmp_path, monkeypatch):
    directory = tmp_path / "data" / "t-0"
    records = written(directory, 5)
    holder = dir_lock.acquire(directory.parent)  # a broker holds it while it opens logs
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a, **k: opened.append(path) or real_open(
        path, *a, **k))
    maps_before = maps.maps_made
    plog = dormant(directory)
    assert plog.recovery_report.clean_shutdown
    plog.checkpoint()  # nothing changed since its clean close: nothing written
    assert (opened, maps.maps_made - maps_before) == ([], 0)
    assert plog.dormant and (directory / files.CLEAN_SHUTDOWN_FILE).exists()
    monkeypatch.undo()

    assert read_all(plog) == records  # the first read opens it, as a clean open does
    assert not plog.dormant and maps.maps_made - maps_before >= 3
    assert not (directory / files.CLEAN_SHUTDOWN_FILE).exists()  # a crash now is not clean
    assert plog.append(make_batch(1)).base_offset == 15
    plog.close()
    dir_lock.release(holder)


def test_closing_a_dormant_log_writes_nothing_and_keeps_it_clean(tmp_path):
    directory = tmp_path / "data" / "t-0"
    records = written(directory, 4)
    before = {entry.name: entry.stat().st_mtime_ns for entry in os.scandir(directory)}
    plog = dormant(directory)
    plog.close()
    assert plog.closed and plog.dormant
    assert {entry.name: entry.stat().st_mtime_ns for entry in os.scandir(directory)} == before
    reopened = PartitionLog(directory)
    assert reopened.recovery_report.clean_shutdown
    assert read_all(reopened) == records
    reopened.close()


def test_a_dormant_log_killed_unused_stays_clean_and_one_killed_after_use_is_recovered(
        tmp_path):
    unused, used = tmp_path / "data" / "t-0", tmp_path / "data" / "t-1"
    records = written(unused, 3)
    written(used, 3)
    for directory in (unused, used):
        plog = dormant(directory)
        if directory == used:
            plog.append(make_batch(2))
        plog.close_handles()  # what SIGKILL leaves
    assert (unused / files.CLEAN_SHUTDOWN_FILE).exists()
    assert not (used / files.CLEAN_SHUTDOWN_FILE).exists()
    again = PartitionLog(used)
    assert not again.recovery_report.clean_shutdown and again.log_end_offset == 11
    again.close()
    with PartitionLog(unused) as reopened:
        assert reopened.recovery_report.clean_shutdown and read_all(reopened) == records


@settings(max_examples=25, deadline=None)
@given(batches=st.integers(0, 12), start=st.integers(0, 40))
def test_a_dormant_log_s_facts_match_the_opened_log(tmp_path_factory, batches, start):
    directory = tmp_path_factory.mktemp("data") / "t-0"
    written(directory, batches, min(start, 3 * batches))
    with dormant(directory) as unopened:
        facts = unopened.facts()
    plog = PartitionLog(directory, LogConfig.from_mapping(SMALL_SEGMENTS))
    segments = plog.segments
    assert facts.log_start_offset == plog.log_start_offset
    assert facts.log_end_offset == plog.log_end_offset
    assert facts.segment_bases == tuple(s.base_offset for s in segments)
    assert facts.segment_sizes == tuple(s.size for s in segments)
    assert facts.size_bytes == plog.size_bytes
    assert facts.index_bytes == plog.index_bytes()
    assert facts.last_log_append_time == plog.last_log_append_time
    if plog.size_bytes:
        assert facts.first_log_append_time == segments[0].first_log_append_time
    plog.close()


def test_retention_opens_a_dormant_log_only_when_something_may_have_expired(tmp_path):
    young, old = tmp_path / "data" / "t-0", tmp_path / "data" / "t-1"
    written(young, 6)
    written(old, 6)
    clock = ManualClock(START_MS + 1000)  # the oldest batch is a second old
    kept = dormant(young, clock, **{"retention.ms": "60000"})
    assert kept.delete_old_segments() == [] and kept.dormant
    expired = dormant(old, clock, **{"retention.ms": "500"})
    deleted = expired.delete_old_segments()
    assert not expired.dormant and [d.reason for d in deleted] == ["time"] * len(deleted)
    assert deleted and expired.log_start_offset == expired.log_end_offset == 18
    for plog in (kept, expired):
        plog.close()


def test_reads_of_a_woken_log_make_no_fsync_and_its_first_write_makes_one_first(
        tmp_path, monkeypatch):
    """A lookup sweep over ten thousand dormant logs opens them all; it must not wait for
    ten thousand directory fsyncs. The marker's removal is made durable by the first write,
    before its bytes are written."""
    directory = tmp_path / "data" / "t-0"
    records = written(directory, 3)
    plog = dormant(directory)
    synced = []
    real_sync = files.fsync_directory
    monkeypatch.setattr(files, "fsync_directory",
                        lambda path: (synced.append(plog.log_end_offset), real_sync(path))[1])
    assert read_all(plog) == records
    assert plog.offset_for_time(START_MS).offset == 0
    assert not plog.dormant and synced == []
    plog.append(make_batch(1))
    plog.append(make_batch(1))
    assert synced == [9]  # once, before the first write moved the end past 9
    plog.close_handles()


def woken_logs(tmp_path, count: int) -> list[PartitionLog]:
    logs = []
    for partition in range(count):
        directory = tmp_path / "data" / f"t-{partition}"
        written(directory, 1)
        plog = dormant(directory)
        plog.wake()
        logs.append(plog)
    return logs


def counting_syncs(monkeypatch) -> dict[str, int]:
    counted = {"fsync_directory": 0, "sync_filesystem": 0}
    for name in counted:
        real = getattr(files, name)

        def counting(path, name=name, real=real):
            counted[name] += 1
            return real(path)
        monkeypatch.setattr(files, name, counting)
    return counted


def test_logs_woken_together_have_their_marker_removals_synced_before_their_first_writes(
        tmp_path, monkeypatch):
    """``sync_marker_removals`` (a read's worker thread runs it after opening the logs):
    below ``MANY_MARKERS`` an fsync each, from it one file-system sync for all; the first
    writes then sync nothing, and a log that was not woken is left alone."""
    few = woken_logs(tmp_path / "few", MANY_MARKERS - 1)
    many = woken_logs(tmp_path / "many", MANY_MARKERS)
    counted = counting_syncs(monkeypatch)
    sync_marker_removals(few)
    assert counted == {"fsync_directory": MANY_MARKERS - 1, "sync_filesystem": 0}
    sync_marker_removals(many)
    assert counted == {"fsync_directory": MANY_MARKERS - 1, "sync_filesystem": 1}
    for plog in few + many:
        plog.append(make_batch(1))
        assert not (plog.directory / files.CLEAN_SHUTDOWN_FILE).exists()
    sync_marker_removals(few + many)  # nothing left to sync
    assert counted == {"fsync_directory": MANY_MARKERS - 1, "sync_filesystem": 1}
    for plog in few + many:
        plog.close()
