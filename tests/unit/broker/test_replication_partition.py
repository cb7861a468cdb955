"""The leader's "caught up" rule for followers (Kafka's): a follower that fetched at least
the log end the leader had at its previous fetch counts as caught up at that previous fetch,
so a steady stream of produces does not make a keeping-up follower look lagging."""

from tests.helpers.storage import make_batch, open_log
from tslog.broker.cluster.view import PartitionState
from tslog.broker.replication.partition import Partition
from tslog.broker.storage.replica import ReplicaLog


def leader(tmp_path):
    part = Partition("t", 0, ReplicaLog(open_log(tmp_path / "p")), node_id=0)
    part.become_leader(PartitionState("t", 0, 0, 1, (0, 1), (0, 1), 0), now_ms=0)
    return part


def test_a_follower_one_append_behind_at_every_fetch_stays_caught_up(tmp_path):
    part = leader(tmp_path)
    for now in range(1000, 60_000, 1000):
        part.replica.append_as_leader(make_batch(1), 1)  # the leader always has one more
        part.record_follower_fetch(1, part.log.log_end_offset - 1, now)
    assert part.lagging_followers(60_000, max_lag_ms=5000) == []


def test_a_follower_stuck_at_one_offset_becomes_lagging(tmp_path):
    part = leader(tmp_path)
    part.replica.append_as_leader(make_batch(1), 1)
    for now in range(1000, 10_000, 1000):
        part.replica.append_as_leader(make_batch(1), 1)
        part.record_follower_fetch(1, 0, now)
    assert part.lagging_followers(10_000, max_lag_ms=5000) == [1]
    assert part.high_watermark == 0  # the ISR still holds it: nothing is committed


def test_a_follower_outside_the_isr_asks_to_join_once_at_the_high_watermark(tmp_path):
    part = leader(tmp_path)
    part.replica.append_as_leader(make_batch(2), 1)
    part.record_follower_fetch(1, 2, 100)
    assert part.high_watermark == 2
    part.become_leader(PartitionState("t", 0, 0, 1, (0,), (0, 1, 2), 1), now_ms=200)
    part.replica.append_as_leader(make_batch(1), 1)
    assert not part.record_follower_fetch(2, 1, 300)  # below the HW
    assert part.record_follower_fetch(2, 3, 400)


def test_a_joining_replica_holds_the_high_watermark_until_the_expansion_is_decided(tmp_path):
    """Kafka's maximal ISR (KIP-497): while the proposal adding replica 2 to the ISR is in
    flight, the HW counts replica 2 too, so no acks=all produce is answered for a record it
    lacks: once in the ISR it may be elected leader (a fault schedule lost an acknowledged
    record that way, the preferred replica elected right after it rejoined)."""
    part = leader(tmp_path)
    part.become_leader(PartitionState("t", 0, 0, 1, (0, 1), (0, 1, 2), 1), now_ms=100)
    part.replica.append_as_leader(make_batch(2), 1)
    part.record_follower_fetch(1, 2, 200)
    assert part.high_watermark == 2
    assert part.record_follower_fetch(2, 2, 300)  # at the HW: it asks to join
    part.begin_join(frozenset({2}))
    part.replica.append_as_leader(make_batch(1), 1)
    part.record_follower_fetch(1, 3, 400)  # the ISR (0, 1) alone would commit offset 2
    assert part.high_watermark == 2
    part.record_follower_fetch(2, 3, 500)
    assert part.high_watermark == 3
    part.end_join()


def test_a_leader_alone_does_not_commit_alone_while_a_replica_joins(tmp_path):
    part = leader(tmp_path)
    part.become_leader(PartitionState("t", 0, 0, 1, (0,), (0, 1), 1), now_ms=100)
    assert part.alone
    part.begin_join(frozenset({1}))
    assert not part.alone  # acks=all now waits for the HW, not for this disk alone
    part.replica.append_as_leader(make_batch(1), 1)
    part.maybe_advance_high_watermark()
    assert part.high_watermark == 0
    part.record_follower_fetch(1, 1, 200)
    assert part.high_watermark == 1
    part.end_join()
    assert part.alone  # refused: alone again until the view says otherwise
