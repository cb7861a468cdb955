"""KIP-101 on two replica logs: a returning old leader cuts its uncommitted tail at the end
of its epoch in the new leader's log, so offsets never fork."""

from tests.helpers.storage import make_batch, open_log
from tslog.broker.replication.fetcher import truncate_for_leader
from tslog.broker.replication.partition import Partition
from tslog.broker.storage.headers import headers_from
from tslog.broker.storage.replica import ReplicaLog


def test_old_leader_truncates_its_divergent_tail_then_copies_the_new_leaders_batches(tmp_path):
    a = ReplicaLog(open_log(tmp_path / "a"))
    b = ReplicaLog(open_log(tmp_path / "b"))
    a.become_leader(1)
    first = a.append_as_leader(make_batch(2), 1)
    b.append_as_follower(a.log.read(first.base_offset))
    a.append_as_leader(make_batch(2), 1)  # never reached b: not committed
    a.log.clock.advance(5)
    b.become_leader(2)
    b.log.clock.advance(10)
    b.append_as_leader(make_batch(3), 2)

    returning = Partition("t", 0, a, node_id=0)
    epoch, end = b.epochs.end_offset_for(a.epochs.latest_epoch, b.log_end_offset)
    assert (epoch, end) == (1, 2)
    truncate_for_leader(returning, epoch, end)
    assert a.log_end_offset == 2 and a.epochs.entries == [(1, 0)]
    a.append_as_follower(b.log.read(2))
    assert [(h.base_offset, h.leader_epoch) for h in headers_from(a.log, 0)] == [(0, 1), (2, 2)]
    assert a.epochs.entries == b.epochs.entries == [(1, 0), (2, 2)]
    for suffix in (".log", ".index", ".timeindex", ".ctindex"):
        name = f"{0:020d}{suffix}"
        a.log.flush(), b.log.flush()
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_leader_that_never_heard_of_our_epoch_cuts_at_its_own_epoch_end(tmp_path):
    follower = ReplicaLog(open_log(tmp_path / "f"))
    follower.become_leader(1)
    follower.append_as_leader(make_batch(2), 1)
    follower.become_leader(3)  # led epoch 3 briefly, wrote one batch nobody copied
    follower.append_as_leader(make_batch(1), 3)
    part = Partition("t", 0, follower, node_id=0)
    # The new leader (epoch 4) knows epochs 1 and 2 only; epoch 1 ends at 2 in its log.
    truncate_for_leader(part, 1, 2)
    assert follower.log_end_offset == 2
    assert follower.epochs.entries == [(1, 0)]
