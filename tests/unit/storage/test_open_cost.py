"""What opening a log after a clean stop costs, counted: a broker's start does it once per
partition, ten thousand times on a big broker. Each file is opened at most once and each
index mapped once (the active segment's straight to writable); the files beside the log
are read with plain calls. Counted by wrapping the calls, not timed."""

import os
from collections import Counter

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import LogConfig, ManualClock, PartitionLog, maps
from tslog.broker.storage.replica import ReplicaLog


def test_a_clean_reopen_opens_each_file_once_and_maps_each_index_once(tmp_path, monkeypatch):
    directory = tmp_path / "data" / "t-0"
    replica = ReplicaLog(open_log(directory))
    replica.become_leader(0)
    for _ in range(3):
        replica.append_as_leader(make_batch(4), 0)
    replica.high_watermark = replica.log.log_end_offset
    replica.checkpoint()
    records = read_all(replica.log)
    replica.log.close()

    opened = Counter()
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        opened[os.fspath(path)] += 1
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    made = []  # an existing directory is not made again (mkdir locks the data directory)
    monkeypatch.setattr(os, "mkdir", lambda *args, **kwargs: made.append(args))
    maps_before = maps.maps_made
    reopened = ReplicaLog(open_log(directory))
    monkeypatch.undo()

    assert reopened.log.recovery_report.clean_shutdown
    assert maps.maps_made - maps_before == 3  # offset, time and CreateTime index, once each
    assert opened and max(opened.values()) == 1, opened
    assert made == []
    assert read_all(reopened.log) == records
    assert reopened.log.append(make_batch(1)).base_offset == 12  # the active segment writes
    reopened.log.close()


def test_a_reopen_after_a_crash_opens_each_index_twice_and_truncates_through_its_descriptor(
        tmp_path, monkeypatch):
    """Recovery keeps an active index's flushed entries, zeroes the rest, sizes the file and
    maps it writable through one descriptor (the first open only read what it held); a broker
    killed with ten thousand partitions does this for all of them before it serves."""
    directory = tmp_path / "data" / "t-0"
    plog = open_log(directory)
    for _ in range(3):
        plog.append(make_batch(4))
    plog.flush()
    plog.checkpoint()
    plog.append(make_batch(4))  # not flushed, then killed
    records = read_all(plog)
    plog.close_handles()

    opened, truncated = Counter(), []
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        opened[os.path.basename(path)] += 1
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "truncate", lambda *args: truncated.append(args))
    reopened = PartitionLog(directory, LogConfig(), ManualClock(START_MS), defer_sync=True)
    monkeypatch.undo()  # deferred, as a broker's start: its one syncfs makes this durable

    report = reopened.recovery_report
    assert not report.clean_shutdown and report.segments_recovered == 1
    assert report.bytes_scanned > 0
    index_opens = {name: n for name, n in opened.items() if name.endswith("index")}
    assert sorted(index_opens.values()) == [2, 2, 2], opened
    assert truncated == []
    assert read_all(reopened) == records
    assert reopened.append(make_batch(1)).base_offset == 16
    reopened.close()
