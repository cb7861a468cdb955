"""ReplicaLog: epochs, producers and the high watermark move with the log."""

import threading

from tests.helpers.storage import START_MS, make_batch, open_log
from tslog.broker.storage import ManualClock
from tslog.broker.storage.background import IOWorker
from tslog.broker.storage.epochs import LeaderEpochCache
from tslog.broker.storage.replica import ReplicaLog
from tslog.protocol.batch_header import parse_header
from tslog.protocol.records import build_batch


def idempotent(seq, count=2, pid=9):
    return build_batch([b"v"] * count, producer_id=pid, producer_epoch=0, base_sequence=seq,
                       create_times=START_MS)


def test_a_follower_copy_learns_epochs_and_producers_from_the_headers(tmp_path):
    leader = ReplicaLog(open_log(tmp_path / "leader"))
    follower = ReplicaLog(open_log(tmp_path / "follower"))
    leader.become_leader(3)
    copies = []
    for seq in (0, 2):
        info = leader.append_as_leader(idempotent(seq), 3)
        copies.append(leader.log.read(info.base_offset))
    leader.become_leader(5)
    info = leader.append_as_leader(make_batch(1), 5)
    copies.append(leader.log.read(info.base_offset))
    for batch in copies:
        follower.append_as_follower(batch)
    assert follower.epochs.entries == leader.epochs.entries == [(3, 0), (5, 4)]
    assert follower.producers.check(parse_header(idempotent(2))) == (2, START_MS)


def test_reopening_rebuilds_what_has_no_file(tmp_path):
    directory = tmp_path / "p"
    replica = ReplicaLog(open_log(directory))
    replica.become_leader(2)
    replica.append_as_leader(idempotent(0), 2)
    replica.append_as_leader(idempotent(2), 2)
    replica.log.close()
    (directory / "leader-epoch-checkpoint").unlink()
    reopened = ReplicaLog(open_log(directory))
    assert reopened.epochs.entries == [(2, 0)]
    assert reopened.producers.check(parse_header(idempotent(2))) == (2, START_MS)
    assert reopened.high_watermark == 0  # never checkpointed: nothing is known committed


def test_truncation_cuts_epochs_producers_and_the_high_watermark(tmp_path):
    replica = ReplicaLog(open_log(tmp_path / "p"))
    replica.become_leader(1)
    replica.append_as_leader(idempotent(0), 1)
    replica.become_leader(2)
    replica.append_as_leader(idempotent(2), 2)
    replica.high_watermark = 4
    replica.checkpoint()
    replica.truncate_to(2)
    assert replica.log.log_end_offset == 2
    assert replica.epochs.entries == [(1, 0)]
    assert replica.high_watermark == 2
    assert replica.producers.check(parse_header(idempotent(2))) is None
    replica.log.close()
    assert ReplicaLog(open_log(tmp_path / "p")).high_watermark == 2  # capped by the log end


def test_an_unchanged_replica_is_not_checkpointed_again(tmp_path):
    replica = ReplicaLog(open_log(tmp_path / "p"))
    replica.append_as_leader(idempotent(0), 0)
    replica.high_watermark = 2
    replica.checkpoint()
    (tmp_path / "p" / "high-watermark").write_text("1\n")  # would be rewritten if checkpointed
    replica.checkpoint()
    assert (tmp_path / "p" / "high-watermark").read_text() == "1\n"
    replica.append_as_leader(idempotent(2), 0)
    replica.checkpoint()
    assert (tmp_path / "p" / "high-watermark").read_text() == "2\n"


def test_a_reopened_unchanged_replica_writes_nothing_at_its_first_checkpoint(tmp_path):
    """A broker restarted over many idle partitions makes no fsync for them when it next
    checkpoints or stops; a capped high watermark or a new batch is still written."""
    directory = tmp_path / "p"
    replica = ReplicaLog(open_log(directory))
    replica.become_leader(0)
    replica.append_as_leader(idempotent(0), 0)
    replica.high_watermark = 2
    replica.checkpoint()
    replica.log.close()
    files = [directory / "high-watermark", directory / "producer-state"]
    before = [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files]
    reopened = ReplicaLog(open_log(directory))
    assert reopened.checkpoint_snapshot() is None
    reopened.checkpoint()
    assert [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files] == before
    reopened.append_as_leader(idempotent(2), 0)
    reopened.high_watermark = 4
    reopened.checkpoint()
    assert files[0].read_text() == "4\n"
    reopened.log.close()
    files[0].write_text("9\n")  # more than the log holds: capped on open, so written again
    capped = ReplicaLog(open_log(directory))
    assert capped.high_watermark == 4
    capped.checkpoint()
    assert files[0].read_text() == "4\n"


def test_header_scans_span_chunks_and_segments(tmp_path, monkeypatch):
    from tslog.broker.storage import headers as headers_module

    monkeypatch.setattr(headers_module, "_HEADERS_PER_LOCK", 3)
    log = open_log(tmp_path / "p", segment_bytes=600)
    for _ in range(10):
        log.append(make_batch(2))
    assert len(log.segments) > 1
    assert [h.base_offset for h in headers_module.headers_from(log, 5)] == list(range(4, 20, 2))
    log.close()


def test_a_reset_follower_continues_empty_at_the_leaders_log_start_and_reopens_there(tmp_path):
    directory = tmp_path / "p"
    replica = ReplicaLog(open_log(directory))
    replica.become_leader(1)
    replica.append_as_leader(idempotent(0), 1)
    last_time = replica.log.last_log_append_time
    replica.reset_to(500)
    assert (replica.log.log_start_offset, replica.log.log_end_offset) == (500, 500)
    assert replica.epochs.entries == [] and replica.high_watermark == 500
    assert replica.log.last_log_append_time == last_time  # time never goes back
    replica.log.close()
    reopened = ReplicaLog(open_log(directory))
    assert (reopened.log.log_start_offset, reopened.log.log_end_offset) == (500, 500)
    assert sorted(p.name for p in directory.glob("*.log")) == [f"{500:020d}.log"]


def test_retention_never_deletes_what_lies_at_or_past_the_high_watermark(tmp_path):
    clock = ManualClock(START_MS)
    log = open_log(tmp_path / "p", clock, segment_bytes=600, retention_bytes=1, retention_ms=10)
    for _ in range(10):
        log.append(make_batch(2))
    segments = log.segments
    assert len(segments) > 3
    clock.advance(1000)  # every segment is expired by size and by time
    keep_from = segments[2].base_offset + 1  # the HW is inside the third segment
    log.delete_old_segments(keep_from)
    assert log.log_start_offset == segments[2].base_offset  # the uncommitted part stays
    log.delete_old_segments()  # without a HW (a single node: the log end) it all goes
    assert log.log_start_offset == log.log_end_offset == 20
    log.close()


def test_producers_idle_for_the_expiration_are_forgotten_alike_on_every_replica(tmp_path):
    """Without expiry every producer a client ever started stays in memory and in each
    checkpoint's snapshot; it is measured on the log's LAT, so a follower forgets the same."""
    clock = ManualClock(START_MS)
    leader = ReplicaLog(open_log(tmp_path / "leader", clock, producer_id_expiration_ms=1000))
    follower = ReplicaLog(open_log(tmp_path / "follower", ManualClock(START_MS + 99_000),
                                   producer_id_expiration_ms=1000))
    for pid in (1, 2):
        info = leader.append_as_leader(idempotent(0, pid=pid), 0)
        follower.append_as_follower(leader.log.read(info.base_offset))
    clock.advance(1001)
    info = leader.append_as_leader(idempotent(2, pid=2), 0)  # producer 2 goes on, 1 is idle
    follower.append_as_follower(leader.log.read(info.base_offset))
    for replica in (leader, follower):
        replica.high_watermark = replica.log.log_end_offset
        replica.checkpoint()
        assert sorted(replica.producers.producers) == [2]
    leader.log.close()
    reopened = ReplicaLog(open_log(tmp_path / "leader", clock, producer_id_expiration_ms=1000))
    assert sorted(reopened.producers.producers) == [2]  # the snapshot on disk forgot it too
    assert reopened.producers.check(parse_header(idempotent(2, pid=2))) == (4, START_MS + 1001)


class StuckWorker:
    """An ``IOWorker`` that ``hold`` keeps busy until ``release``: what the loop's hand-off
    looks like while the disk is slow."""

    def __init__(self, held=True):
        self.worker = IOWorker("test-io")
        self._release = threading.Event()
        if held:
            self.hold()

    def hold(self):
        self.worker.barrier().result(10)  # what came before has run
        self.worker.submit(lambda: self._release.wait(10))

    def release(self):
        self._release.set()
        self.worker.close()


def epochs_on_disk(directory):
    return LeaderEpochCache(directory).entries


def test_a_new_epoch_does_not_wait_for_the_disk_but_lands_before_the_producer_snapshot(tmp_path):
    stuck = StuckWorker()
    replica = ReplicaLog(open_log(tmp_path / "p", worker=stuck.worker))
    try:
        replica.become_leader(3)  # a failover: answered without the file's two fsyncs
        replica.append_as_leader(idempotent(0), 3)
        assert replica.epochs.entries == [(3, 0)]
        assert epochs_on_disk(tmp_path / "p") == []
        replica.high_watermark = 2
        replica.checkpoint()  # its producer snapshot covers epoch 3's batch: epochs go first
        assert epochs_on_disk(tmp_path / "p") == [(3, 0)]
    finally:
        stuck.release()


def test_a_cut_waits_for_the_worker_and_no_older_deferred_write_undoes_it(tmp_path):
    stuck = StuckWorker()
    replica = ReplicaLog(open_log(tmp_path / "p", worker=stuck.worker))
    replica.become_leader(1)
    replica.append_as_leader(make_batch(2), 1)
    replica.become_leader(2)  # deferred: the worker is stuck
    replica.append_as_leader(make_batch(2), 2)
    replica.truncate_to(2)  # a follower cutting a divergent tail: no fsync on the caller
    assert replica.epochs.entries == [(1, 0)]
    assert epochs_on_disk(tmp_path / "p") == []
    stuck.release()  # the writes run now, in order: the newest content is the cut
    assert epochs_on_disk(tmp_path / "p") == [(1, 0)]


def test_an_epoch_whose_deferred_write_a_crash_lost_is_rebuilt_on_open(tmp_path):
    directory = tmp_path / "p"
    stuck = StuckWorker(held=False)
    replica = ReplicaLog(open_log(directory, worker=stuck.worker))
    replica.become_leader(1)
    replica.append_as_leader(idempotent(0), 1)
    replica.high_watermark = 2
    replica.checkpoint()
    stuck.hold()  # from here on, new epochs wait for a stuck disk
    replica.become_leader(4)
    replica.append_as_leader(idempotent(2), 4)
    replica.log.close_handles()  # SIGKILL: the deferred write never ran
    assert epochs_on_disk(directory) == [(1, 0)]
    stuck.release()  # the log is closed: nothing is written any more
    assert epochs_on_disk(directory) == [(1, 0)]
    reopened = ReplicaLog(open_log(directory))
    assert reopened.epochs.entries == [(1, 0), (4, 2)]
    assert reopened.epochs.end_offset_for(1, reopened.log_end_offset) == (1, 2)
