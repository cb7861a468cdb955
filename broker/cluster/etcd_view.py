"""``EtcdClusterView``: the ClusterView of a broker in an etcd-backed cluster.

What it does, in start-up order (``start``):
1. connect, read everything under ``/<cluster>/`` into the cache, and watch from the next
   revision, so the cache sees every later change exactly once, in etcd's order;
2. register ``brokers/<node_id>`` with our address, bound to a lease kept alive at a third of
   its TTL: if we die, the key goes after ``broker_session_timeout_ms``. A registration held
   by another live broker makes ``start`` wait for one session timeout (a killed previous
   run of this broker leaves its key until its lease expires), then fail with
   ``DuplicateBrokerError``;
3. campaign for the controller key (create-if-absent, bound to the lease), and again
   whenever it disappears; the holder runs ``controller.Controller``.

Listeners run on the event loop after each batch of watch events (one etcd watch response)
has been applied: change listeners first (the broker's topic sync, which creates the logs of
new replicas), then the partition-state listeners, once per changed state (replication,
which then finds the log of every state it hears about). A state this broker wrote itself (``propose_isr``, the controller) is
applied and reported at once; its watch event is then recognised as old and skipped.

If the watch stream breaks (etcd restarted, network), the view re-reads a snapshot, reports
the differences and watches again. If our lease expired (we were cut off for longer than the
session timeout), we register again under a new lease.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from dataclasses import replace
from typing import Callable

from ..config import BrokerConfig
from .controller import Controller
from .errors import DuplicateBrokerError, EtcdError
from .etcd import Etcd, WatchEvent, follow_prefix
from .etcd_tls import etcd_tls
from .session import DeadPeers, LeaseClock
from .records import Changes, ClusterCache, ClusterKeys, TopicRecord, encode, encode_state
from .view import (NO_LEADER, Leaders, PartitionState, StaleStateError, StateListener,
                   kafka_address, leaders_of)

log = logging.getLogger("tslog.broker.cluster")

PRODUCER_ID_BLOCK = 1000  # ids reserved from etcd at a time
CLOSE_TIMEOUT_S = 5.0  # revoking the lease and closing the channel at shutdown
RESYNC_DELAY_S = 0.5
ChangeListener = Callable[[Changes], None]


class EtcdClusterView:
    def __init__(self, config: BrokerConfig, address: tuple[str, int], etcd: Etcd) -> None:
        self.node_id = config.node_id
        self.config = config
        self.address = address
        self.kafka_address = kafka_address(config)
        self.etcd = etcd
        self.keys = ClusterKeys(config.cluster_name)
        self.cache = ClusterCache(self.keys)
        self.controller = Controller(self)
        self.ttl_s = max(1, math.ceil(config.broker_session_timeout_ms / 1000))
        self.lease_id = 0
        self.registration_revision = 0  # create_revision of our brokers/<id> key
        self.failed: asyncio.Future | None = None  # set if we can no longer be this broker
        self._state_listeners: list[StateListener] = []
        self._change_listeners: list[ChangeListener] = []
        self._pending = Changes()
        self._flush_scheduled = False
        self._waiters: list[tuple[int, asyncio.Future]] = []
        self._tasks: list[asyncio.Task] = []
        self._producer_ids = (0, 0)  # [next, end) of the reserved block
        self._producer_id_lock = asyncio.Lock()
        self.group_store = None  # the broker's EtcdGroupOffsetStore, which shares our client
        self.started_at = 0.0  # loop time of start(): the controller's start-up grace
        self.departed: set[int] = set()  # brokers whose registration we saw disappear
        self.lease_clock = LeaseClock()  # when our leadership may be in doubt (session.py)
        self.dead_peers = DeadPeers(self)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    async def start(cls, config: BrokerConfig, address: tuple[str, int]) -> "EtcdClusterView":
        """Connect, load, watch, register and campaign. Raises DuplicateBrokerError, EtcdError."""
        # An etcd call must fail well within a session, or a hung call outlives our lease.
        timeout_s = min(5.0, max(2.0, config.broker_session_timeout_ms / 2000))
        etcd = Etcd(config.etcd_addresses, timeout_s=timeout_s, tls=etcd_tls(config))
        view = cls(config, address, etcd)
        view.failed = asyncio.get_running_loop().create_future()
        view.started_at = asyncio.get_running_loop().time()
        try:
            revision = await view._first_contact()
            view.spawn(view._watch_loop(revision))
            await view._register()
            view.spawn(view._keep_alive_loop())
            # Serve only once our own watch shows us (and everyone registered before us):
            # a CreateTopics answered earlier would count 0 live brokers.
            if not await view.wait_for_revision(view.registration_revision, timeout_s):
                log.warning("broker %d: the etcd watch has not shown its own registration "
                            "after %.0f s; going on", view.node_id, timeout_s)
            await view._campaign()
        except BaseException:
            await view.close(revoke=False)
            raise
        log.info("broker %d joined cluster %r (etcd %s); controller is %d", view.node_id,
                 config.cluster_name, config.etcd_endpoints, view.cache.controller_id)
        return view

    async def _first_contact(self) -> int:
        """Connect and read the cluster, retrying for up to ``request_timeout_ms``: brokers
        and etcd are often started together (compose, a reboot), and etcd may be a moment
        late. Returns the snapshot's revision. Raises EtcdError once the time is up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.request_timeout_ms / 1000
        while True:
            try:
                await self.etcd.connect()
                return await self._resync()
            except EtcdError as exc:
                if loop.time() >= deadline:
                    raise
                log.warning("etcd not reachable yet, retrying: %s", exc)
                await asyncio.sleep(0.5)

    def spawn(self, coroutine) -> None:
        self._tasks = [task for task in self._tasks if not task.done()]
        self._tasks.append(asyncio.get_running_loop().create_task(coroutine))

    async def close(self, revoke: bool = True) -> None:
        """Stop watching; revoke the lease, so others take over at once rather than after the
        session timeout (our registration and controller key go with it)."""
        await self.controller.stop()
        if self.group_store is not None:
            await self.group_store.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:  # bounded: a broker must stop even when etcd (or the channel to it) is wedged
            await asyncio.wait_for(self._leave(revoke), CLOSE_TIMEOUT_S)
        except asyncio.TimeoutError:
            log.warning("leaving the cluster took over %.0f s; stopping anyway", CLOSE_TIMEOUT_S)

    async def _leave(self, revoke: bool) -> None:
        if revoke and self.lease_id:
            await self._revoke(self.lease_id)
        await self.etcd.close()

    async def _revoke(self, lease_id: int) -> None:
        try:
            await self.etcd.revoke_lease(lease_id)
        except EtcdError as exc:
            log.warning("could not revoke lease %x (it expires by itself): %s", lease_id, exc)

    # -- ClusterView -----------------------------------------------------------------------

    def brokers(self) -> dict[int, tuple[str, int]]:
        return dict(self.cache.brokers)

    def kafka_brokers(self) -> dict[int, tuple[str, int]]:
        return dict(self.cache.kafka_brokers)

    def controller_id(self) -> int:
        return self.cache.controller_id

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        return self.cache.partitions.get((topic, partition))

    def partition_leaders(self, topic: str, count: int) -> list[Leaders | None]:
        return leaders_of(self.cache.partitions, topic, count)

    def add_listener(self, listener: StateListener) -> None:
        self._state_listeners.append(listener)

    async def propose_isr(self, state: PartitionState, isr: tuple[int, ...]) -> PartitionState:
        """CAS on the partition's mod_revision, also requiring our own registration to be the
        live one: a broker whose session expired cannot change an ISR. An unreachable etcd
        is reported as StaleStateError too (nothing changed; try again on the next state)."""
        isr = tuple(isr)
        current = self.partition_state(state.topic, state.partition)
        if state.leader != self.node_id or current is None or current.version != state.version:
            raise StaleStateError(f"{state.topic}-{state.partition}: not the current state "
                                  f"led by broker {self.node_id}")
        if self.node_id not in isr or not set(isr) <= set(state.replicas):
            raise ValueError(f"an ISR must hold the leader and only replicas: {isr}")
        proposed = replace(state, isr=isr)
        key = self.keys.partition(state.topic, state.partition)
        try:
            ok, revision = await self.etcd.txn(
                [self.etcd.mod_is(key, state.version),
                 self.etcd.created_at(self.keys.broker(self.node_id),
                                      self.registration_revision)],
                [self.etcd.put(key, encode_state(proposed))])
        except EtcdError as exc:
            raise StaleStateError(f"etcd unreachable, ISR unchanged: {exc}") from exc
        if not ok:
            raise StaleStateError(f"{state.topic}-{state.partition}: version {state.version} "
                                  f"is stale")
        accepted = replace(proposed, version=revision)
        self.note_state(accepted)
        return accepted

    async def allocate_producer_id(self) -> int:
        async with self._producer_id_lock:
            next_id, end = self._producer_ids
            if next_id >= end:
                next_id, end = await self._reserve_producer_ids()
            self._producer_ids = (next_id + 1, end)
            return next_id

    def may_acknowledge(self) -> bool:
        """True while our lease is surely alive and our cache has applied our own latest
        registration: after a new registration (the old lease expired while we were paused
        or cut off) states older than it may still name us leader, so wait for the watch."""
        return self.lease_clock.valid() and self.cache.revision >= self.registration_revision

    def peer_unreachable(self, node_id: int, address: tuple[str, int]) -> None:
        """A connection to a peer was refused: confirm it is dead and end its session."""
        self.dead_peers.report(node_id, address)

    # -- additions for the control plane and the broker ------------------------------------

    def topics(self) -> dict[str, TopicRecord]:
        return dict(self.cache.topics)

    def is_controller(self) -> bool:
        return self.controller.active

    def add_change_listener(self, listener: ChangeListener) -> None:
        """Call ``listener(changes)`` after every applied batch of changes."""
        self._change_listeners.append(listener)

    def startup_grace_left(self) -> float:
        """Seconds until an unregistered broker may be judged dead (see controller.py)."""
        return max(0.0, self.started_at + self.ttl_s - asyncio.get_running_loop().time())

    def in_startup_grace(self) -> bool:
        return self.startup_grace_left() > 0

    async def wait_for_revision(self, revision: int, timeout_s: float) -> bool:
        """Wait until the cache has applied ``revision`` (and listeners ran); False on timeout."""
        if self.cache.revision >= revision:
            return True
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((revision, future))
        try:
            await asyncio.wait_for(future, timeout_s)
            return True
        except asyncio.TimeoutError:
            return False

    def note_state(self, state: PartitionState) -> None:
        """Apply a state this broker wrote, before its watch event arrives."""
        if self.cache.note_state(state):
            self._pending.states.append(state)
            self._schedule_flush()

    # -- watch and cache -------------------------------------------------------------------

    async def _resync(self) -> int:
        """Replace the cache by a snapshot; report what differs. Returns its revision."""
        revision, kvs = await self.etcd.get_prefix(self.keys.prefix)
        fresh = ClusterCache(self.keys)
        ignored = Changes()
        for kv in kvs:
            fresh.apply(kv.key, kv.value, kv.mod_revision, kv.create_revision, ignored)
        old, changes = self.cache, self._pending
        self.departed |= set(old.brokers) - set(fresh.brokers)
        changes.states.extend(s for tp, s in fresh.partitions.items() if old.partitions.get(tp) != s)
        changes.brokers_changed |= fresh.brokers != old.brokers
        changes.controller_changed |= (fresh.controller_id, fresh.controller_revision) != (
            old.controller_id, old.controller_revision)
        changes.topics_changed |= (fresh.topics != old.topics
                                   or fresh.partitions.keys() != old.partitions.keys())
        fresh.revision = max(revision, old.revision)
        self.cache = fresh
        self._schedule_flush()
        return revision

    async def _watch_loop(self, revision: int) -> None:
        await follow_prefix(self.etcd, self.keys.prefix, revision, self._on_event,
                            self._resync, "the cluster state", RESYNC_DELAY_S)

    def _on_event(self, event: WatchEvent) -> None:
        kv = event.kv
        if kv.key.startswith(self.keys.brokers):
            self._note_broker(kv.key, event.deleted)
        self.cache.apply(kv.key, None if event.deleted else kv.value, kv.mod_revision,
                         kv.create_revision, self._pending)
        self._schedule_flush()

    def _note_broker(self, key: str, deleted: bool) -> None:
        try:
            node_id = int(key[len(self.keys.brokers):])
        except ValueError:
            return
        if deleted:
            self.departed.add(node_id)
        else:
            self.departed.discard(node_id)
            self.dead_peers.registered(node_id)

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Report one batch: change listeners, state listeners, controller, then waiters."""
        self._flush_scheduled = False
        changes, self._pending = self._pending, Changes()
        if changes:
            for listener in self._change_listeners:
                _call(listener, changes)
        for state in changes.states:
            for listener in self._state_listeners:
                _call(listener, state)
        self.controller.on_changes(bool(changes.brokers_changed or changes.states
                                        or changes.topics_changed))
        if changes.controller_changed and self.cache.controller_id == NO_LEADER:
            self.spawn(self._campaign())
        applied = self.cache.revision
        waiting = []
        for revision, future in self._waiters:
            if revision <= applied:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((revision, future))
        self._waiters = waiting

    # -- registration, lease, election -----------------------------------------------------

    async def _register(self) -> None:
        """Create brokers/<id> on a new lease; wait out a previous run's expiring key."""
        self.lease_clock.lost()
        lease_id, granted = await self.etcd.grant_lease(self.ttl_s)
        key = self.keys.broker(self.node_id)
        registration = {"host": self.address[0], "port": self.address[1]}
        if self.kafka_address is not None:
            registration["kafka_host"], registration["kafka_port"] = self.kafka_address
        value = encode(registration)
        deadline = asyncio.get_running_loop().time() + self.ttl_s + 1.0
        warned = False
        while True:
            renewal_sent = time.monotonic()
            if await self.etcd.keep_alive(lease_id) <= 0:  # it may lapse while we wait
                lease_id, granted = await self.etcd.grant_lease(self.ttl_s)
            sent_at = renewal_sent
            ok, revision = await self.etcd.txn([self.etcd.absent(key)],
                                               [self.etcd.put(key, value, lease_id)])
            if ok:
                self.lease_id, self.registration_revision = lease_id, revision
                self.ttl_s = granted
                self.lease_clock.renewed(sent_at, granted)
                return
            holder = await self.etcd.get(key)
            where = json.loads(holder.value) if holder is not None else {}
            if asyncio.get_running_loop().time() >= deadline:
                await self._revoke(lease_id)
                raise DuplicateBrokerError(
                    f"node_id {self.node_id} is already registered in cluster "
                    f"{self.config.cluster_name!r} by a live broker at "
                    f"{where.get('host')}:{where.get('port')}; give this broker another node_id")
            if not warned:
                log.warning("node_id %d is registered by %s:%s; waiting up to %d s for that "
                            "registration to expire", self.node_id, where.get("host"),
                            where.get("port"), self.ttl_s + 1)
                warned = True
            await asyncio.sleep(0.1)

    async def _keep_alive_loop(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            lease_id, sent_at = self.lease_id, time.monotonic()
            try:
                remaining = await self.etcd.keep_alive(lease_id)
            except EtcdError as exc:
                log.warning("could not refresh the etcd lease: %s", exc)
                continue
            if remaining > 0:
                if lease_id == self.lease_id:
                    self.lease_clock.renewed(sent_at, min(remaining, self.ttl_s))
                continue
            self.lease_clock.lost()
            log.error("our etcd session expired (cut off for longer than %d s); registering "
                      "again", self.ttl_s)
            try:
                await self._register()
                await self._campaign()
            except DuplicateBrokerError as exc:
                log.error("%s", exc)
                if not self.failed.done():
                    self.failed.set_result(str(exc))
                return
            except EtcdError as exc:
                log.warning("registering again failed: %s", exc)

    async def _campaign(self) -> None:
        """Become controller if nobody is (create-if-absent, bound to our lease)."""
        if not self.lease_id or self.cache.controller_id != NO_LEADER:
            return
        try:
            ok, _ = await self.etcd.txn(
                [self.etcd.absent(self.keys.controller)],
                [self.etcd.put(self.keys.controller, encode({"node_id": self.node_id}),
                               self.lease_id)])
        except EtcdError as exc:
            log.warning("controller campaign failed: %s", exc)
            return
        if ok:
            log.info("broker %d won the controller election", self.node_id)

    async def _reserve_producer_ids(self) -> tuple[int, int]:
        """Take the next block of producer ids with a CAS loop on ``producer_ids``."""
        key = self.keys.producer_ids
        while True:
            current = await self.etcd.get(key)
            start = 0 if current is None else int(json.loads(current.value)["next"])
            compare = (self.etcd.absent(key) if current is None
                       else self.etcd.mod_is(key, current.mod_revision))
            ok, _ = await self.etcd.txn(
                [compare], [self.etcd.put(key, encode({"next": start + PRODUCER_ID_BLOCK}))])
            if ok:
                return start, start + PRODUCER_ID_BLOCK


def _call(listener: Callable, argument) -> None:
    try:
        listener(argument)
    except Exception:
        log.exception("cluster listener %r failed", listener)
