"""The controller's work: keep every partition led by a live in-sync replica.

One broker at a time is the controller (whoever holds the lease-bound ``controller`` key).
Its job is a sweep, run whenever brokers, partitions or topics change: for each partition,
``decide`` what its state should be given the live brokers, and write the difference as a
compare-and-swap on the partition key's mod_revision, fenced on the controller key's
create_revision, so a deposed controller's late writes fail instead of overwriting its
successor's. Sweeping everything (rather than reacting to one event) makes a new controller
repair whatever happened while nobody was in charge, and makes a failed CAS harmless: the
next sweep recomputes from the newer state.

Failover rules (docs/cluster.md):
- leader alive: drop dead brokers from the ISR (the leader stays, same epoch);
- leader dead: the first replica (assignment order) that is alive and in the ISR leads, epoch
  + 1, ISR = its live members;
- no live ISR member: leader NO_LEADER, epoch + 1, the ISR is kept so its members can lead
  again when they return; with ``unclean_leader_election_enable`` the first live replica
  leads instead (ISR = itself), accepting the loss of what only the ISR had.

Start-up grace: a broker that is not registered counts as dead only once this broker has
watched the cluster for one session timeout, or once it saw that broker's registration go.
So a whole cluster starting again, brokers a few seconds apart, keeps its leaders and ISRs
instead of the first broker up taking every partition over.

Beyond failover, the sweep completes reassignments (``reassignment.completed``) and, with
``auto_leader_rebalance_enable``, gives leadership back to each partition's preferred
replica once it is live and in the ISR (``reassignment.preferred``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from .errors import EtcdError
from .reassignment import completed, preferred
from .records import ClusterCache, ClusterKeys, encode_state
from .view import NO_LEADER, PartitionState

if TYPE_CHECKING:  # types only: the etcd client loads with the view that owns it
    from ..config import BrokerConfig
    from .etcd import Etcd

log = logging.getLogger("tslog.broker.cluster.controller")

RETRY_DELAY_S = 0.05  # after a failed CAS: let the watch deliver the newer state first
ETCD_RETRY_DELAY_S = 0.5


def decide(state: PartitionState, live: set[int], unclean: bool,
           presumed: frozenset[int] = frozenset()) -> tuple[int, int, tuple[int, ...]] | None:
    """The (leader, leader_epoch, isr) ``state`` should have, or None if it is right.

    ``live``: registered brokers. ``presumed``: brokers not registered yet but not known to
    be dead either (a cluster starting up); they keep their places, but only a live broker
    can be elected.
    """
    not_dead = live | presumed
    live_isr = tuple(b for b in state.isr if b in not_dead)
    if state.leader != NO_LEADER and state.leader in not_dead:
        if live_isr != state.isr and state.leader in live_isr:
            return state.leader, state.leader_epoch, live_isr
        return None
    candidates = [b for b in state.replicas if b in live_isr and b in live]
    if candidates:
        leader = candidates[0]
        return leader, state.leader_epoch + 1, live_isr
    if unclean:
        alive = [b for b in state.replicas if b in live]
        if alive:
            return alive[0], state.leader_epoch + 1, (alive[0],)
    if state.leader == NO_LEADER:
        return None
    return NO_LEADER, state.leader_epoch + 1, state.isr


def assign_replicas(topic: str, partitions: int, replication_factor: int,
                    brokers: list[int]) -> list[tuple[int, ...]]:
    """Round-robin replica lists, preferred leader first and rotating over the brokers.

    The starting broker depends on the topic name, so leaders of many small topics spread
    over the cluster instead of all landing on the lowest id.
    """
    ordered = sorted(brokers)
    count = len(ordered)
    start = sum(topic.encode()) % count
    return [tuple(ordered[(start + p + i) % count] for i in range(replication_factor))
            for p in range(partitions)]


class ControlledCluster(Protocol):
    """What the controller reads and writes of the cluster: the view's cache of etcd, the
    etcd client and key layout its fenced writes use, and the start-up grace. The
    ``EtcdClusterView`` that owns the controller is one; naming only this keeps the
    controller from importing the view that imports it."""

    node_id: int
    config: BrokerConfig
    etcd: Etcd
    keys: ClusterKeys
    cache: ClusterCache
    departed: set[int]  # brokers whose registration was seen to go: dead, grace or not

    def startup_grace_left(self) -> float:
        """Seconds until an unregistered broker may be judged dead."""

    def in_startup_grace(self) -> bool: ...

    def note_state(self, state: PartitionState) -> None:
        """Take a state this broker wrote into the cache before etcd's watch reports it."""


class Controller:
    """Runs sweeps while this broker holds the controller key."""

    def __init__(self, view: ControlledCluster) -> None:
        self.view = view
        self.epoch = 0  # create_revision of our controller key while we hold it, else 0
        self.elections = 0  # leader changes this broker made as controller
        self.reassignments_completed = 0  # partitions whose move this controller finished
        self._dirty = False
        self._task: asyncio.Task | None = None

    @property
    def active(self) -> bool:
        return self.epoch != 0

    def on_changes(self, brokers_or_states_changed: bool) -> None:
        """Called by the view after every applied batch of watch events."""
        cache = self.view.cache
        mine = cache.controller_id == self.view.node_id and cache.controller_revision != 0
        if not mine:
            if self.active:
                log.info("broker %d is no longer the controller", self.view.node_id)
            self.epoch = 0
            return
        if self.epoch != cache.controller_revision:
            self.epoch = cache.controller_revision
            log.info("broker %d is the controller (controller epoch %d)", self.view.node_id,
                     self.epoch)
            self.kick()
            grace_left = self.view.startup_grace_left()
            if grace_left > 0:  # then judge the brokers that never showed up
                asyncio.get_running_loop().call_later(grace_left, self.kick)
        elif brokers_or_states_changed:
            self.kick()

    def kick(self) -> None:
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self.epoch = 0
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while self._dirty and self.active:
            self._dirty = False
            try:
                if not await self._sweep():
                    self._dirty = True
                    await asyncio.sleep(RETRY_DELAY_S)
            except EtcdError as exc:
                log.warning("controller sweep failed, retrying: %s", exc)
                self._dirty = True
                await asyncio.sleep(ETCD_RETRY_DELAY_S)
            except Exception:
                log.exception("controller sweep failed")
                self._dirty = True
                await asyncio.sleep(ETCD_RETRY_DELAY_S)

    async def _sweep(self) -> bool:
        """One pass over every partition; False if some write lost a race (sweep again)."""
        view = self.view
        unclean = view.config.unclean_leader_election_enable
        all_written = await self._create_missing_states()
        for state in list(view.cache.partitions.values()):
            if not self.active:
                return True
            live = set(view.cache.brokers)
            new = self._next_state(state, live, unclean)
            if new is not None and not await self._write(new, state):
                all_written = False
        return all_written

    def _next_state(self, state: PartitionState, live: set[int],
                    unclean: bool) -> PartitionState | None:
        """What ``state`` should become: the failover rules first; when they have nothing
        to change, the end of a reassignment whose target replicas are all in sync, or else
        (``auto_leader_rebalance_enable``) leadership back to the preferred replica."""
        decision = decide(state, live, unclean, self._presumed(state, live))
        if decision is not None:
            leader, epoch, isr = decision
            return replace(state, leader=leader, leader_epoch=epoch, isr=isr)
        if state.target:
            return completed(state, live)
        if self.view.config.auto_leader_rebalance_enable:
            return preferred(state, live)
        return None

    def _presumed(self, state: PartitionState, live: set[int]) -> frozenset[int]:
        """Replicas of ``state`` not registered but still within the start-up grace."""
        if self.view.in_startup_grace():
            return frozenset(b for b in state.replicas
                             if b not in live and b not in self.view.departed)
        return frozenset()

    async def _create_missing_states(self) -> bool:
        """Give partitions of a topic whose creation was cut short (a topic too big for one
        transaction, written in several) their initial state."""
        view = self.view
        etcd, keys = view.etcd, view.keys
        all_written = True
        for record in list(view.cache.topics.values()):
            topic = record.metadata
            missing = [p for p in range(topic.partitions)
                       if (topic.name, p) not in view.cache.partitions]
            live = sorted(view.cache.brokers)
            if not missing or len(live) < topic.replication_factor or not self.active:
                continue
            assignment = assign_replicas(topic.name, topic.partitions,
                                         topic.replication_factor, live)
            for p in missing:
                replicas = assignment[p]
                state = PartitionState(topic.name, p, replicas[0], 0, replicas, replicas, 0)
                key = keys.partition(topic.name, p)
                ok, _ = await etcd.txn(
                    [etcd.absent(key), etcd.mod_is(keys.topic(topic.name), record.version),
                     etcd.created_at(keys.controller, self.epoch)],
                    [etcd.put(key, encode_state(state))])
                all_written = all_written and ok
        return all_written

    async def _write(self, new: PartitionState, old: PartitionState) -> bool:
        view = self.view
        etcd, keys = view.etcd, view.keys
        key = keys.partition(new.topic, new.partition)
        ok, revision = await etcd.txn(
            [etcd.mod_is(key, old.version), etcd.created_at(keys.controller, self.epoch)],
            [etcd.put(key, encode_state(new))])
        if not ok:
            return False
        new = replace(new, version=revision)
        if old.target and not new.target:
            self.reassignments_completed += 1
            self.elections += new.leader != old.leader
            log.info("%s-%d: reassignment done: replicas %s -> %s, leader %d, epoch %d",
                     new.topic, new.partition, list(old.replicas), list(new.replicas),
                     new.leader, new.leader_epoch)
        elif new.leader != old.leader:
            self.elections += 1
            log.info("%s-%d: leader %d -> %d, epoch %d, isr %s", new.topic, new.partition,
                     old.leader, new.leader, new.leader_epoch, list(new.isr))
        else:
            log.info("%s-%d: isr %s -> %s (dead brokers removed)", new.topic, new.partition,
                     list(old.isr), list(new.isr))
        view.note_state(new)
        return True
