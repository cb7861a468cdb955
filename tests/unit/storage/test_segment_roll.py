"""Rolls with an I/O worker: the next segment made ahead, the old one sealed later.

Goal: a roll no longer waits on the disk, and nothing a user sees changes for it: every
record stays readable while a seal is owed, lookups by time still land, a sealed segment's
index files end trimmed, and a crash between the roll and the seal (the worker never ran it)
loses nothing acknowledged: the next open rebuilds the untrimmed indexes from the log.
Method: logs on a real ``IOWorker``, held busy where a test needs the seal still owed;
a crash is ``close_handles`` (what a killed process leaves) or a real SIGKILL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import textwrap

from tests.helpers.storage import START_MS, make_batch, open_log, read_all
from tslog.broker.storage import LogConfig, ManualClock, PartitionLog
from tslog.broker.storage.background import IOWorker
from tslog.broker.storage.index import OffsetIndex
from tslog.broker.storage.replica import ReplicaLog

SEGMENT_BYTES = 4096


class HeldWorker:
    """An ``IOWorker`` whose thread is busy until ``release``: a slow disk."""

    def __init__(self):
        self.worker = IOWorker("test-io")
        self._release = threading.Event()
        self.worker.submit(lambda: self._release.wait(10))

    def release(self):
        self._release.set()
        self.worker.barrier().result(10)


def worker_log(directory, worker, **config):
    settings = {"segment.bytes": SEGMENT_BYTES, "index.interval.bytes": 0}
    settings.update({key.replace("_", "."): value for key, value in config.items()})
    return PartitionLog(directory, LogConfig.from_mapping(settings), ManualClock(START_MS),
                        worker)


def fill(log, batches, clock_step=1):
    for _ in range(batches):
        log.clock.advance(clock_step)
        log.append(make_batch(3, value_size=100))


def index_lengths(directory):
    return {path.name: path.stat().st_size for path in directory.glob("*.index")}


def test_rolled_segments_are_sealed_by_the_worker_and_read_correctly_throughout(tmp_path):
    held = HeldWorker()
    log = worker_log(tmp_path / "t-0", held.worker)
    fill(log, 60)
    assert len(log.segments) > 4
    owed = [s for s in log.segments[:-1] if s.seal_pending]
    assert owed  # the worker is held: rolls went on without their seals
    assert len(read_all(log)) == 180  # readers use the still-writable maps meanwhile
    assert log.offset_for_time(START_MS + 30).offset == 87
    held.release()
    assert not any(s.seal_pending for s in log.segments)
    lengths = index_lengths(tmp_path / "t-0")
    for segment in log.segments[:-1]:  # sealed: trimmed to their entries
        assert lengths[segment.offset_index.path.name] == segment.index_entries * 8
    assert len(read_all(log)) == 180
    log.close()
    held.worker.close()
    reopened = open_log(tmp_path / "t-0", segment_bytes=SEGMENT_BYTES)
    assert reopened.recovery_report.clean_shutdown
    assert [r.offset for r in read_all(reopened)] == list(range(180))
    assert reopened.offset_for_time(START_MS + 30).offset == 87
    reopened.close()


def test_the_next_segment_is_made_ahead_and_renamed_into_place(tmp_path):
    worker = IOWorker("test-io")
    log = worker_log(tmp_path / "t-0", worker)
    fill(log, 6)  # more than half of segment.bytes: the worker makes the spare
    worker.barrier().result(10)
    spare = sorted(p.name for p in (tmp_path / "t-0").glob("next-segment.*"))
    assert spare == ["next-segment.ctindex.tmp", "next-segment.index.tmp",
                     "next-segment.log.tmp", "next-segment.timeindex.tmp"]
    fill(log, 18)
    worker.barrier().result(10)
    assert len(log.segments) > 2
    for segment in log.segments:
        assert segment.log_path.exists() and segment.offset_index.path.exists()
    log.close()
    worker.close()
    assert not list((tmp_path / "t-0").glob("next-segment.*"))  # close leaves no spare
    reopened = open_log(tmp_path / "t-0", segment_bytes=SEGMENT_BYTES)
    assert [r.offset for r in read_all(reopened)] == list(range(72))
    reopened.close()


def test_a_crash_between_roll_and_seal_loses_nothing(tmp_path):
    held = HeldWorker()
    log = worker_log(tmp_path / "t-0", held.worker)
    fill(log, 40)
    log.flush()  # acknowledged and durable
    unsealed = [s.offset_index.path for s in log.segments[:-1] if s.seal_pending]
    assert unsealed
    log.close_handles()  # the process dies: the owed seals never run
    held.release()
    assert all(path.stat().st_size > SEGMENT_BYTES for path in unsealed)  # untrimmed
    reopened = open_log(tmp_path / "t-0", segment_bytes=SEGMENT_BYTES)
    assert [r.offset for r in read_all(reopened)] == list(range(120))
    assert reopened.offset_for_time(START_MS + 21).offset == 60
    for path in unsealed:  # rebuilt from the log and trimmed
        index = OffsetIndex(path)
        assert path.stat().st_size == index.entries * 8 and index.entries > 0
        index.close()
    reopened.close()


def test_a_sigkill_right_after_rolls_whose_seals_are_owed_loses_nothing(tmp_path):
    """A real process killed with SIGKILL while its worker still owes seals."""
    script = textwrap.dedent(f"""
        import os, signal, threading
        from tests.helpers.storage import START_MS, make_batch
        from tslog.broker.storage import LogConfig, ManualClock, PartitionLog
        from tslog.broker.storage.background import IOWorker
        worker = IOWorker("io")
        worker.submit(threading.Event().wait)  # the disk never answers
        log = PartitionLog({str(tmp_path / "t-0")!r},
                           LogConfig.from_mapping({{"segment.bytes": {SEGMENT_BYTES},
                                                   "index.interval.bytes": 0}}),
                           ManualClock(START_MS), worker)
        for i in range(40):
            log.clock.advance(1)
            log.append(make_batch(3, value_size=100))
        assert sum(s.seal_pending for s in log.segments) == 2  # SEALS_OWED_MAX
        log.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd(), timeout=60,
                          capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    reopened = open_log(tmp_path / "t-0", segment_bytes=SEGMENT_BYTES)
    assert not reopened.recovery_report.clean_shutdown
    assert [r.offset for r in read_all(reopened)] == list(range(120))
    assert reopened.offset_for_time(START_MS + 40).offset == 117
    reopened.close()


def test_truncating_into_a_segment_whose_seal_is_owed_makes_it_active_again(tmp_path):
    held = HeldWorker()
    replica = ReplicaLog(worker_log(tmp_path / "t-0", held.worker))
    fill(replica.log, 12)
    segments = replica.log.segments
    assert segments[-2].seal_pending
    cut = segments[-2].base_offset + 3
    replica.truncate_to(cut)  # a follower cutting a divergent tail into the rolled segment
    assert replica.log_end_offset == cut and not replica.log.active_segment.seal_pending
    held.release()  # the owed seal finds the segment active again and leaves it
    fill(replica.log, 12)
    held.worker.barrier().result(10)
    assert [r.offset for r in read_all(replica.log)] == list(range(cut + 36))
    replica.log.close()
    held.worker.close()
    reopened = open_log(tmp_path / "t-0", segment_bytes=SEGMENT_BYTES)
    assert reopened.recovery_report.clean_shutdown
    assert [r.offset for r in read_all(reopened)] == list(range(cut + 36))
    reopened.close()


def test_the_flush_policy_syncs_in_the_worker(tmp_path):
    held = HeldWorker()
    log = worker_log(tmp_path / "t-0", held.worker, flush_messages=1)
    fill(log, 3)
    assert log.recovery_point == 0  # queued behind the slow disk, the append did not wait
    held.release()
    assert log.recovery_point == 9
    log.close()
    held.worker.close()


def test_a_roll_after_the_worker_closed_still_seals_without_deadlock(tmp_path):
    """Shutdown closes the worker before the logs: a roll in between hands its seal to a
    worker that no longer runs a thread, while the roll holds the log's lock."""
    worker = IOWorker("test-io")
    log = worker_log(tmp_path / "t-0", worker)
    fill(log, 6)
    worker.close()
    fill(log, 12)  # rolls: each seal runs in a thread of its own, once the lock is free
    assert [r.offset for r in read_all(log)] == list(range(54))
    log.close()
    reopened = open_log(tmp_path / "t-0", segment_bytes=SEGMENT_BYTES)
    assert reopened.recovery_report.clean_shutdown
    assert [r.offset for r in read_all(reopened)] == list(range(54))
    reopened.close()
