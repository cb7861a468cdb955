"""A follower's truncation and reset change the log at once and leave the disk to the worker.

Goal: ``truncate_to`` and ``reset_to`` run on the event loop, so they must not wait on the
disk: no fsync, no unlink on the caller's thread; reads see the new log the moment the call
returns; the I/O worker unlinks what was set aside and writes the checkpoint later. And a
crash in between (the worker never ran: ``close_handles``, what SIGKILL leaves) reopens to a
consistent log: the cut, no leftover files, a last LAT the new leader's batches pass, and
leader epochs that match the batches.
Method: logs on a real ``IOWorker`` held busy on an event; fsyncs recorded by thread.
"""

from __future__ import annotations

import os
import threading

import pytest

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import ManualClock, recovery
from tslog.broker.storage.background import IOWorker
from tslog.broker.storage.epochs import LeaderEpochCache
from tslog.broker.storage.replica import ReplicaLog
from tslog.broker.storage.segment_roll import SPARE_STEM
from tslog.protocol.records import split_batches


class HeldWorker:
    """An ``IOWorker`` that ``hold`` keeps busy until ``release``: a slow disk."""

    def __init__(self):
        self.worker = IOWorker("test-io")
        self._release = threading.Event()

    def hold(self):
        self.worker.barrier().result(10)
        self._release.clear()
        self.worker.submit(lambda: self._release.wait(10))

    def release(self):
        self._release.set()
        self.worker.barrier().result(10)

    def close(self):
        self._release.set()
        self.worker.close()


@pytest.fixture
def held():
    worker = HeldWorker()
    yield worker
    worker.close()


@pytest.fixture
def syncs_on(monkeypatch):
    """The threads that called fsync/fdatasync/unlink, by name (recorded, then done)."""
    seen: list[tuple[str, str]] = []

    def recording(name, real):
        def call(*args, **kwargs):
            seen.append((name, threading.current_thread().name))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(os, "fsync", recording("fsync", os.fsync))
    monkeypatch.setattr(os, "fdatasync", recording("fdatasync", os.fdatasync))
    monkeypatch.setattr(os, "unlink", recording("unlink", os.unlink))
    return seen


def three_segments(directory, worker, clock=None):
    log = open_log(directory, clock or ManualClock(START_MS), worker, segment_bytes=700)
    for _ in range(9):
        log.clock.advance(10)
        log.append(make_batch(2, value_size=40))
    assert len(log.segments) >= 3
    return log


def leftovers(directory):
    """Set-aside segment files (the next segment's spare files are not leftovers)."""
    return sorted(p.name for p in directory.iterdir()
                  if p.name.endswith(".tmp") and not p.name.startswith(SPARE_STEM))


def test_a_truncation_returns_before_any_fsync_or_unlink_and_reads_see_the_cut(
        tmp_path, held, syncs_on):
    directory = tmp_path / "t-0"
    log = three_segments(directory, held.worker)
    log.checkpoint()
    checkpoint_before = recovery.read_checkpoint(directory)
    cut = log.segments[1].base_offset + 2
    held.hold()
    syncs_on.clear()
    log.truncate_to(cut)
    assert syncs_on == []  # the caller (the event loop) waited on no disk
    assert log.log_end_offset == cut
    assert [r.offset for r in read_all(log)] == list(range(cut))
    assert len(log.segments) == 2
    assert leftovers(directory)  # the later segment's files, set aside for the worker
    assert recovery.read_checkpoint(directory) == checkpoint_before
    held.release()
    assert {thread for _, thread in syncs_on} == {"test-io"}
    assert leftovers(directory) == []
    assert recovery.read_checkpoint(directory) == (cut, log.last_log_append_time)
    log.append(make_batch(2))  # the log goes on at the cut
    assert [r.offset for r in read_all(log)] == list(range(cut + 2))
    log.close()


def test_a_reset_returns_before_any_fsync_or_unlink_and_the_log_goes_on_there(
        tmp_path, held, syncs_on):
    directory = tmp_path / "t-0"
    log = three_segments(directory, held.worker)
    last_time = log.last_log_append_time
    held.hold()
    syncs_on.clear()
    log.reset_to(1000)
    assert syncs_on == []
    assert (log.log_start_offset, log.log_end_offset) == (1000, 1000)
    assert read_all(log) == []
    assert log.last_log_append_time == last_time  # time along the partition never goes back
    held.release()
    assert {thread for _, thread in syncs_on} == {"test-io"}
    assert leftovers(directory) == []
    assert sorted(p.name for p in directory.glob("*.log")) == [f"{1000:020d}.log"]
    log.close()
    reopened = open_log(directory)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (1000, 1000)
    assert reopened.last_log_append_time == last_time
    reopened.close()


def test_a_crash_before_the_worker_ran_reopens_to_the_cut_with_its_own_last_time(
        tmp_path, held):
    directory = tmp_path / "t-0"
    log = three_segments(directory, held.worker)
    log.checkpoint()  # the recovery point and the LAT of the tail about to be cut
    cut = log.segments[1].base_offset + 2
    held.hold()
    log.truncate_to(cut)
    kept_time = log.last_log_append_time
    log.close_handles()  # SIGKILL: the unlinks and the checkpoint never ran
    reopened = open_log(directory, ManualClock(START_MS))
    assert leftovers(directory) == []
    assert reopened.log_end_offset == cut
    assert [r.offset for r in read_all(reopened)] == list(range(cut))
    # Not the checkpoint's LAT (a batch that is gone): the new leader's next batch,
    # stamped after the last one both logs share, is accepted.
    assert reopened.last_log_append_time == kept_time
    leader = open_log(tmp_path / "leader", ManualClock(kept_time + 1))
    leader.reset_to(cut)  # a new leader's batch right after the shared prefix
    leader.append(make_batch(2, create_time=kept_time + 1))
    reopened.append_as_follower(leader.read(cut))
    assert reopened.log_end_offset == cut + 2
    reopened.close()
    leader.close()


def read_batches(log):
    """Every stored batch of ``log``, as bytes."""
    return [bytes(batch) for batch in split_batches(log.read(log.log_start_offset, 1 << 30))]


def test_an_epoch_cut_a_crash_lost_is_found_when_the_log_grew_past_it(tmp_path, held):
    """The stale file names epoch 2 from offset 2; after the cut the log took epoch 3's
    batches there, past the producer snapshot's offset, so the usual repair (a scan from
    the snapshot) would add epoch 3 too late. Opening checks the latest epoch's batch."""
    directory = tmp_path / "f-0"
    replica = ReplicaLog(open_log(directory, worker=held.worker))
    replica.become_leader(1)
    replica.append_as_leader(make_batch(2), 1)
    replica.become_leader(2)
    for _ in range(2):
        replica.append_as_leader(make_batch(2), 2)
    replica.high_watermark = 2
    replica.checkpoint()  # a producer snapshot at 6, epochs [(1, 0), (2, 2)] on disk
    held.release()
    assert LeaderEpochCache(directory).entries == [(1, 0), (2, 2)]
    new_leader = ReplicaLog(open_log(tmp_path / "leader"))
    new_leader.become_leader(1)
    new_leader.append_as_leader(read_batches(replica.log)[0], 1)
    new_leader.become_leader(3)
    for _ in range(4):
        new_leader.append_as_leader(make_batch(2), 3)
    held.hold()
    replica.truncate_to(2)  # the follower cuts epoch 2's tail...
    for batch in read_batches(new_leader.log)[1:]:
        replica.append_as_follower(batch)  # ...and copies epoch 3 up to offset 10
    assert replica.epochs.entries == [(1, 0), (3, 2)]
    replica.log.close_handles()  # SIGKILL before the worker wrote the cut
    assert LeaderEpochCache(directory).entries == [(1, 0), (2, 2)]
    reopened = ReplicaLog(open_log(directory))
    assert reopened.epochs.entries == [(1, 0), (3, 2)]
    assert reopened.epochs.end_offset_for(2, reopened.log_end_offset) == (1, 2)
    reopened.log.close()
    new_leader.log.close()


def test_a_flush_that_spans_a_truncation_does_not_move_the_recovery_point_past_the_cut(
        tmp_path, monkeypatch):
    """Group commit flushes from its own thread; if a follower's cut lands while that
    flush waits on the disk, the flushed end is no longer the log's: the recovery point
    must not move there (recovery would then trust data appended after the cut, unsynced)."""
    log = three_segments(tmp_path / "t-0", None)
    end = log.log_end_offset
    in_sync, go_on = threading.Event(), threading.Event()
    real = os.fdatasync

    def slow_fdatasync(fd):
        if threading.current_thread().name == "group-commit":
            in_sync.set()
            go_on.wait(10)
        return real(fd)

    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
    flusher = threading.Thread(target=log.flush, name="group-commit")
    flusher.start()
    assert in_sync.wait(10)
    log.truncate_to(4)
    for _ in range(8):
        log.append(make_batch(2))  # past the old end again, not synced
    assert log.log_end_offset > end
    go_on.set()
    flusher.join(10)
    assert log.recovery_point <= 4
    log.close()
