"""The etcd-backed ClusterView and topic store against a real etcd: registration, controller
election, topic creation, failover on session expiry, and compare-and-swap fencing.

Brokers here are views in this process (no logs, no sockets), so a "dead" broker is one whose
lease keepalives and watch stop: exactly what etcd sees of a SIGKILLed or cut-off process.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tslog.broker.cluster import StaleStateError
from tslog.broker.cluster.errors import DuplicateBrokerError, EtcdError
from tslog.broker.cluster.etcd_view import EtcdClusterView
from tslog.broker.cluster.records import encode_topic
from tslog.broker.metadata.etcd_store import EtcdMetadataStore
from tslog.broker.config import build_config
from tslog.broker.metadata import TopicMetadata
from tslog.broker.topics import TopicError
from tslog.protocol.errors import ErrorCode

SESSION_MS = 2000
FAILOVER_BOUND_S = SESSION_MS / 1000 + 8.0  # lease TTL + etcd's expiry check + margin (shared, busy CI)


def _config(etcd, node_id: int):
    return build_config([{"etcd_endpoints": etcd.endpoint, "node_id": node_id,
                          "broker_session_timeout_ms": SESSION_MS,
                          "listen": f"127.0.0.1:{19000 + node_id}"}])


async def _start(etcd, node_id: int) -> EtcdClusterView:
    return await EtcdClusterView.start(_config(etcd, node_id), ("127.0.0.1", 19000 + node_id))


@pytest.fixture
async def views(etcd):
    started = [await _start(etcd, n) for n in range(3)]
    await _until(lambda: all(len(v.brokers()) == 3 for v in started), 10,
                 "every view has heard every registration", started)
    yield started
    for view in started:  # bounded: a wedged gRPC channel must not hang the whole run
        try:
            await asyncio.wait_for(view.close(), 15)
        except TimeoutError:
            pass


async def _cut_off(view: EtcdClusterView) -> None:
    """Stop keepalives and the watch, as if the process died or lost its network."""
    for task in view._tasks:
        task.cancel()
    await asyncio.gather(*view._tasks, return_exceptions=True)
    view._tasks.clear()
    await view.controller.stop()


async def _until(predicate, timeout_s: float, what: str, views=()) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start >= timeout_s:
            seen = {v.node_id: (v.controller_id(), sorted(v.brokers()),
                                sorted(v.cache.partitions.values(), key=str)) for v in views}
            raise AssertionError(f"not within {timeout_s} s: {what}; views: {seen}")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


async def _create(view, name="events", partitions=3, rf=3, everyone=()):
    """Create through ``view``; wait until each of ``everyone`` has heard of every partition."""
    await EtcdMetadataStore(view, 5.0).create_topic(TopicMetadata(name, partitions, {}, rf))
    await _until(lambda: all(v.partition_state(name, p) for v in everyone
                             for p in range(partitions)), 10, "every view has the states")


async def test_every_broker_sees_all_registrations_and_one_controller(views):
    await _until(lambda: all(len(v.brokers()) == 3 for v in views), 5, "all registered")
    assert {v.controller_id() for v in views} == {0}
    assert views[1].brokers()[2] == ("127.0.0.1", 19002)
    assert [v.is_controller() for v in views] == [True, False, False]


async def test_create_topic_spreads_leaders_and_every_broker_agrees(views):
    await _create(views[1], everyone=views)  # any broker may create
    states = [[v.partition_state("events", p) for p in range(3)] for v in views]
    assert states[0] == states[1] == states[2]
    assert sorted(s.leader for s in states[0]) == [0, 1, 2]
    for state in states[0]:
        assert state.leader_epoch == 0 and state.isr == state.replicas
        assert sorted(state.replicas) == [0, 1, 2] and state.leader == state.replicas[0]
    with pytest.raises(TopicError) as exists:
        await _create(views[2])
    assert exists.value.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(TopicError) as too_many:
        await _create(views[0], "wide", 1, 4)
    assert too_many.value.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


async def test_dead_leader_is_replaced_by_an_isr_member_with_a_new_epoch(views):
    await _create(views[0], everyone=views)
    before = {p: views[0].partition_state("events", p) for p in range(3)}
    await _cut_off(views[2])  # broker 2 (not the controller) dies
    survivors = views[:2]

    def settled():
        return all(2 not in v.partition_state("events", p).isr
                   and v.partition_state("events", p).leader != 2
                   for v in survivors for p in range(3))
    elapsed = await _until(settled, FAILOVER_BOUND_S, "failover", views)
    for p in range(3):
        after = survivors[1].partition_state("events", p)
        assert after == survivors[0].partition_state("events", p)
        if before[p].leader == 2:
            assert after.leader in before[p].isr and after.leader != 2
            assert after.leader_epoch == before[p].leader_epoch + 1
        else:
            assert after.leader == before[p].leader
            assert after.leader_epoch == before[p].leader_epoch
        assert after.isr == tuple(b for b in before[p].isr if b != 2)
    assert views[0].controller.elections == 1
    assert elapsed < FAILOVER_BOUND_S


async def test_a_new_controller_takes_over_and_handles_the_next_failure(views):
    await _create(views[0], everyone=views)
    await _cut_off(views[0])  # the controller dies
    await _until(lambda: views[1].controller_id() in (1, 2) and views[2].controller_id()
                 == views[1].controller_id(), FAILOVER_BOUND_S, "new controller", views)
    await _until(lambda: all(views[1].partition_state("events", p).leader != 0
                             for p in range(3)), FAILOVER_BOUND_S, "leaders moved off 0", views)
    new_controller = views[1].controller_id()
    other = views[3 - new_controller]
    await _cut_off(other)  # then the other broker dies too
    keeper = views[new_controller]
    await _until(lambda: all(keeper.partition_state("events", p).leader == new_controller
                             and keeper.partition_state("events", p).isr == (new_controller,)
                             for p in range(3)), FAILOVER_BOUND_S, "all on the last broker",
                 views)


async def test_last_isr_member_gone_means_no_leader_until_it_returns(etcd, views):
    await _create(views[0], "solo", 1, 1, everyone=views)
    owner = views[0].partition_state("solo", 0).leader
    assert owner != 0  # the name places it off the controller, which must survive here
    await _cut_off(views[owner])
    await _until(lambda: views[0].partition_state("solo", 0).leader == -1,
                 FAILOVER_BOUND_S, "no leader")
    state = views[0].partition_state("solo", 0)
    assert state.isr == (owner,) and state.leader_epoch == 1
    await views[owner].etcd.close()
    views[owner] = await _start(etcd, owner)  # it comes back: it leads again, epoch 2
    await _until(lambda: views[0].partition_state("solo", 0).leader == owner,
                 FAILOVER_BOUND_S, "leader again")
    assert views[0].partition_state("solo", 0).leader_epoch == 2


async def test_propose_isr_is_a_compare_and_swap_on_the_version(views):
    await _create(views[0], everyone=views)
    state = views[0].partition_state("events", 0)
    leader = views[state.leader]
    follower = [b for b in state.replicas if b != state.leader][0]
    shrunk = await leader.propose_isr(state, tuple(b for b in state.isr if b != follower))
    assert follower not in shrunk.isr and shrunk.version > state.version
    await _until(lambda: all(v.partition_state("events", 0) == shrunk for v in views), 10,
                 "everyone sees the shrink")
    with pytest.raises(StaleStateError):
        await leader.propose_isr(state, state.isr)  # computed from the old version
    with pytest.raises(StaleStateError):
        await views[follower].propose_isr(shrunk, shrunk.replicas)  # not the leader


async def test_a_deposed_leader_cannot_change_the_isr(views):
    await _create(views[0], everyone=views)
    led_by_2 = next(p for p in range(3) if views[2].partition_state("events", p).leader == 2)
    stale = views[2].partition_state("events", led_by_2)
    await _cut_off(views[2])  # partitioned: hears nothing, keeps no session
    await _until(lambda: views[0].partition_state("events", led_by_2).leader != 2,
                 FAILOVER_BOUND_S, "a new leader")
    assert views[2].partition_state("events", led_by_2) == stale  # it still believes it leads
    with pytest.raises(StaleStateError):
        await views[2].propose_isr(stale, (2,))
    assert views[0].partition_state("events", led_by_2).leader != 2


async def test_a_live_brokers_node_id_cannot_be_taken(etcd, views):
    started = time.monotonic()
    with pytest.raises(DuplicateBrokerError, match="node_id 1 is already registered"):
        await _start(etcd, 1)
    assert time.monotonic() - started < SESSION_MS / 1000 + 3
    assert views[0].brokers()[1] == ("127.0.0.1", 19001)


async def test_producer_ids_are_unique_across_the_cluster(views):
    ids = await asyncio.gather(*(v.allocate_producer_id() for v in views for _ in range(5)))
    assert len(set(ids)) == 15


async def test_brokers_resynchronise_after_etcd_restarts(etcd, views, caplog):
    await _create(views[0], "before", 1, 3, everyone=views)
    await asyncio.to_thread(etcd.stop)
    await asyncio.sleep(0.5)  # the watches break while etcd is gone
    await asyncio.to_thread(etcd.start)
    store = EtcdMetadataStore(views[1], 5.0)
    for _ in range(50):  # the first calls may still meet the reconnecting channel
        try:
            await store.create_topic(TopicMetadata("after", 2, {}, 3))
            break
        except EtcdError:
            await asyncio.sleep(0.2)
    else:
        pytest.fail("etcd did not take a write within 10 s of its restart")
    await _until(lambda: all(v.partition_state("after", 1) for v in views), 10,
                 "every view hears of a topic created after the restart")
    assert all(set(v.topics()) == {"before", "after"} for v in views)
    assert all(len(v.brokers()) == 3 and v.controller_id() == 0 for v in views)
    assert "watch of the cluster state interrupted" in caplog.text  # the watches did break


async def test_a_topic_larger_than_one_etcd_transaction_gets_every_partition(views):
    await _create(views[0], "wide", 300, 2, everyone=views)  # etcd takes 128 ops per txn
    states = [views[2].partition_state("wide", p) for p in range(300)]
    assert all(len(s.replicas) == 2 and s.isr == s.replicas for s in states)
    assert {s.leader for s in states} == {0, 1, 2}


async def test_the_controller_gives_a_half_created_topic_its_missing_partitions(views):
    # A creator that died between its transactions left the topic key with no states.
    view = views[1]
    await view.etcd.txn([], [view.etcd.put(view.keys.topic("half"), encode_topic(
        TopicMetadata("half", 4, {}, 3), "id-of-half"))])
    await _until(lambda: all(v.partition_state("half", p) for v in views for p in range(4)),
                 10, "the controller wrote the missing states")
    state = views[2].partition_state("half", 3)
    assert state.leader_epoch == 0 and sorted(state.replicas) == [0, 1, 2]
