"""The controller's rules (who leads after a failure, how replicas are placed) and the cache's
decoding of etcd keys: pure functions, checked without etcd."""

from __future__ import annotations

from tslog.broker.cluster.controller import assign_replicas, decide
from tslog.broker.cluster.records import Changes, ClusterCache, ClusterKeys, encode, encode_state
from tslog.broker.cluster.view import NO_LEADER, PartitionState


def state(leader, epoch, isr, replicas=(0, 1, 2), version=7):
    return PartitionState("t", 0, leader, epoch, tuple(isr), tuple(replicas), version)


def test_a_live_leader_keeps_its_epoch_and_loses_dead_followers():
    assert decide(state(0, 3, (0, 1, 2)), {0, 1, 2}, False) is None
    assert decide(state(0, 3, (0, 1, 2)), {0, 2}, False) == (0, 3, (0, 2))


def test_a_dead_leader_is_replaced_by_the_first_live_isr_replica_in_assignment_order():
    assert decide(state(0, 3, (2, 0, 1)), {1, 2}, False) == (1, 4, (2, 1))
    # broker 1 is alive but out of the ISR: not eligible
    assert decide(state(0, 3, (0, 2)), {1, 2}, False) == (2, 4, (2,))


def test_no_live_isr_member_means_no_leader_and_the_isr_is_kept():
    assert decide(state(0, 3, (0,)), {1, 2}, False) == (NO_LEADER, 4, (0,))
    assert decide(state(NO_LEADER, 4, (0,)), {1, 2}, False) is None
    assert decide(state(NO_LEADER, 4, (0,)), {0, 1}, False) == (0, 5, (0,))


def test_unclean_election_picks_a_live_replica_outside_the_isr():
    assert decide(state(0, 3, (0,)), {1, 2}, True) == (1, 4, (1,))
    assert decide(state(0, 3, (0,), replicas=(0,)), {1, 2}, True) == (NO_LEADER, 4, (0,))


def test_assignment_is_round_robin_with_the_preferred_leader_rotating():
    lists = assign_replicas("events", 4, 3, [2, 0, 1])  # the name starts it at broker 1
    assert lists == [(1, 2, 0), (2, 0, 1), (0, 1, 2), (1, 2, 0)]
    assert assign_replicas("events", 2, 2, [0, 1, 2, 3]) == [(1, 2), (2, 3)]
    assert all(len(r) == 1 for r in assign_replicas("x", 4, 1, [5]))


def test_the_cache_applies_states_once_and_skips_older_versions():
    keys = ClusterKeys("c")
    cache = ClusterCache(keys)
    changes = Changes()
    cache.apply(keys.partition("my.topic-1", 3), encode_state(state(1, 2, (1, 2))), 10, 5,
                changes)
    got = cache.partitions["my.topic-1", 3]
    assert (got.topic, got.partition, got.leader, got.version) == ("my.topic-1", 3, 1, 10)
    assert changes.states == [got]
    assert not cache.note_state(got)  # our own write, heard again: no second report
    later = Changes()
    cache.apply(keys.partition("my.topic-1", 3), encode_state(state(2, 3, (2,))), 10, 5, later)
    assert not later.states and cache.partitions["my.topic-1", 3].leader == 1


def test_the_cache_tracks_brokers_controller_and_survives_garbage():
    keys = ClusterKeys("c")
    cache = ClusterCache(keys)
    changes = Changes()
    cache.apply(keys.broker(4), encode({"host": "127.0.0.1", "port": 9094}), 3, 3, changes)
    cache.apply(keys.controller, encode({"node_id": 4}), 4, 4, changes)
    cache.apply(keys.topic("bad"), b"not json", 5, 5, changes)
    assert cache.brokers == {4: ("127.0.0.1", 9094)}
    assert (cache.controller_id, cache.controller_revision) == (4, 4)
    assert "bad" not in cache.topics and cache.revision == 5
    cache.apply(keys.controller, None, 6, 0, changes)
    cache.apply(keys.broker(4), None, 7, 0, changes)
    assert cache.controller_id == NO_LEADER and cache.brokers == {}


def test_brokers_not_yet_registered_at_start_up_keep_their_places_but_cannot_be_elected():
    starting = frozenset({1, 2})  # not registered yet, not seen leaving either
    assert decide(state(1, 3, (1, 2, 0)), {0}, False, starting) is None
    assert decide(state(1, 3, (1, 0)), {0}, False, frozenset({2})) == (0, 4, (0,))
    # a no-leader partition waits for a registered ISR member
    assert decide(state(NO_LEADER, 4, (1,)), {0}, False, starting) is None
    assert decide(state(NO_LEADER, 4, (1, 0)), {0}, False, starting) == (0, 5, (1, 0))
