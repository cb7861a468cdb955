"""``GroupService``: the consumer-group coordinator as a broker runs it.

The coordinator (``broker.groups``) is a pure state machine; this adapter gives it what it
cannot have itself: the clock, the topics' partition counts, a timer that expires silent
members, durability, and a place. A heartbeat is answered only once the group's new state is
stored, so a restart or a failover never hands out again what an answer gave away;
heartbeats that change nothing (the steady state: the record holds no heartbeat times) write
nothing. Writes of one group are serialised by a FIFO lock and always write the group's
newest state, so an older state never lands after a newer one.

Where it runs: a single broker coordinates every group from the moment it opens, its state
in the data directory (``state_files.GroupStateStore``). In a cluster the coordinator is the
controller: ``serve_with`` starts a *term* (a coordinator rebuilt from the etcd store of one
controller epoch, ``state_etcd``) when this broker becomes controller and
ends it when it stops being one; between terms ``coordinator`` is None and nothing is
answered from memory that another broker may have changed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Protocol

from tslog.protocol.errors import ErrorCode

from ..topics import TopicManager
from .clock import Clock
from .coordinator import GroupCoordinator
from .state_files import GroupStateStore
from .views import JOIN_EPOCH, CoordinatorConfig, HeartbeatResponse

log = logging.getLogger("tslog.broker.groups")

EXPIRY_CHECK_MAX_S = 1.0
LOAD_RETRY_S = 0.5  # a term whose state could not be read is tried again after this


class GroupRecords(Protocol):
    """Where a term's group records live. Every method raises OSError on failure."""

    async def load(self) -> list[dict]: ...

    async def write(self, group_id: str, record: dict) -> None: ...

    async def delete(self, group_id: str) -> None: ...


class FileGroupRecords:
    """A single broker's ``GroupStateStore``, its blocking file I/O run in a worker thread."""

    def __init__(self, store: GroupStateStore) -> None:
        self.store = store

    async def load(self) -> list[dict]:
        return await asyncio.to_thread(self.store.load)

    async def write(self, group_id: str, record: dict) -> None:
        await asyncio.to_thread(self.store.write, group_id, record)

    async def delete(self, group_id: str) -> None:
        await asyncio.to_thread(self.store.delete, group_id)


class _Term:
    """One stretch of coordinating: the coordinator, its store, what is stored, the timer."""

    def __init__(self, store: GroupRecords, coordinator: GroupCoordinator,
                 durable: dict[str, dict]) -> None:
        self.store = store
        self.coordinator = coordinator
        self.durable = durable  # group id -> the record last written
        self.locks: dict[str, asyncio.Lock] = {}
        self.timer: asyncio.Task | None = None


class GroupService:
    """Owner: the event loop (a single broker's may be built in a thread: it reads the data
    directory; ``start`` then runs its expiry timer on the loop).

    Args:
        store: a single broker's group state on disk, restored here; None for a clustered
            broker, which coordinates only while ``serve_with`` gives it an etcd store.
    """

    def __init__(self, store: GroupStateStore | None, topics: TopicManager, clock: Clock,
                 config: CoordinatorConfig | None = None) -> None:
        self.topics = topics
        self.clock = clock
        self._config = config or CoordinatorConfig()
        self._term: _Term | None = None
        self._wanted: GroupRecords | None = None  # the store the follower should run on
        self._follower: asyncio.Task | None = None
        self._stopped = False
        # group id -> whether a Kafka classic group of that id has members (set by the broker
        # once the classic service exists): a join to such a group id is refused.
        self.classic_busy: Callable[[str], bool] = lambda group_id: False
        if store is not None:
            self._term = self._restore(FileGroupRecords(store), store.load())

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    @property
    def coordinator(self) -> GroupCoordinator | None:
        """The running coordinator; None while this broker coordinates no group."""
        return None if self._term is None else self._term.coordinator

    @property
    def active(self) -> bool:
        return self._term is not None

    # -- terms -------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the single broker's expiry timer on the loop (a cluster's terms run their own)."""
        if self._term is not None and self._term.timer is None:
            self._start_timer(self._term)

    def serve_with(self, store: GroupRecords | None) -> None:
        """Coordinate from ``store`` (a new controller epoch's), or stop coordinating (None).
        Returns at once; a task switches terms in order and retries a load that failed."""
        if self._stopped:
            return
        self._wanted = store
        if self._follower is None or self._follower.done():
            self._follower = asyncio.get_running_loop().create_task(self._follow(),
                                                                    name="group-terms")

    async def stop(self) -> None:
        """End the term and never start another (the broker is shutting down)."""
        self._stopped = True
        self._wanted = None
        if self._follower is not None:
            self._follower.cancel()
            await asyncio.gather(self._follower, return_exceptions=True)
        await self._end()

    async def _follow(self) -> None:
        """Until the running term is the wanted one: end the old term, begin the new one
        (a load that fails is tried again while that store is still the wanted one)."""
        while self._wanted is not (None if self._term is None else self._term.store):
            wanted = self._wanted
            await self._end()
            if wanted is None:
                continue
            try:
                await self._begin(wanted)
            except OSError as exc:
                log.warning("cannot load the consumer groups' state, retrying: %s", exc)
                await asyncio.sleep(LOAD_RETRY_S)
            except Exception:  # a bug must not leave the controller without its groups
                log.exception("starting to coordinate the consumer groups failed, retrying")
                await asyncio.sleep(LOAD_RETRY_S)

    async def _begin(self, store: GroupRecords) -> None:
        term = self._restore(store, await store.load())
        self._start_timer(term)
        self._term = term
        log.info("coordinating %d consumer group(s)", len(term.durable))

    def _restore(self, store: GroupRecords, records: list[dict]) -> _Term:
        """A term whose coordinator holds ``records``; every member's session starts now."""
        # The topics first: groups restored into a coordinator that knew none would all
        # move to a new epoch (a rebalance for nothing) at their first heartbeat.
        coordinator = GroupCoordinator(self._config, self._partition_counts())
        durable: dict[str, dict] = {}
        now_ms = self.clock.now_ms()
        for record in records:
            try:
                coordinator.restore_group(record, now_ms)
                durable[record["group_id"]] = record
            except (ValueError, KeyError, TypeError):
                log.exception("consumer group state of another format; ignoring it")
        return _Term(store, coordinator, durable)

    def _start_timer(self, term: _Term) -> None:
        term.timer = asyncio.get_running_loop().create_task(self._expire_forever(term),
                                                            name="group-expiry")

    async def _end(self) -> None:
        term, self._term = self._term, None
        if term is not None:
            if term.timer is not None:
                term.timer.cancel()
                await asyncio.gather(term.timer, return_exceptions=True)
            log.info("no longer coordinating consumer groups")

    # -- requests ----------------------------------------------------------------------------

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                        subscribed_topics, owned,
                        client: tuple[str, str] = ("", "")) -> HeartbeatResponse:
        """One member's heartbeat, answered once the group's resulting state is durable. A
        join to a group id that a Kafka classic group uses answers INCONSISTENT_GROUP_PROTOCOL.

        A failed write (or no term at all) answers COORDINATOR_NOT_AVAILABLE: the member
        retries the same heartbeat, which the coordinator accepts again (it keeps the
        previous epoch), or finds the coordinator that replaced this one. ``client`` is the
        member's (client id, host), kept from its join for describe."""
        term = self._term
        if term is None:
            return HeartbeatResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id,
                                     member_epoch, 0, None)
        if member_epoch == JOIN_EPOCH and self.classic_busy(group_id):
            # One group id, one kind of group (Kafka 4): this one is a classic group.
            return HeartbeatResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id,
                                     member_epoch, 0, None)
        term.coordinator.set_topics(self._partition_counts())
        answer = term.coordinator.heartbeat(group_id, member_id, member_epoch,
                                            subscribed_topics, owned, self.clock.now_ms(),
                                            client)
        if answer.error is not ErrorCode.NONE:
            return answer
        if not await self._persist(term, group_id):
            return HeartbeatResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, answer.member_id,
                                     member_epoch, answer.heartbeat_interval_ms, None)
        return answer

    async def delete_group(self, group_id: str) -> ErrorCode:
        term = self._term
        if term is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        code = term.coordinator.delete_group(group_id)
        if code is ErrorCode.NONE and not await self._persist(term, group_id):
            return ErrorCode.KAFKA_STORAGE_ERROR
        return code

    def _partition_counts(self) -> dict[str, int]:
        return {name: meta.partitions for name, meta in self.topics.topics.items()}

    async def _persist(self, term: _Term, group_id: str) -> bool:
        """Write the group's newest state unless it is stored already; False if the write
        failed (the state stays in memory and is written by the group's next change)."""
        async with term.locks.setdefault(group_id, asyncio.Lock()):
            record = term.coordinator.group_record(group_id)
            if record == term.durable.get(group_id):
                return True
            try:
                if record is None:
                    await term.store.delete(group_id)
                    term.durable.pop(group_id, None)
                else:
                    await term.store.write(group_id, record)
                    term.durable[group_id] = record
            except OSError as exc:
                log.error("writing the state of consumer group %r failed: %r", group_id, exc)
                return False
        return True

    async def expire_now(self) -> None:
        """Remove the members whose session or revocation time ran out, durably."""
        if self._term is not None:
            await self._expire(self._term)

    async def _expire(self, term: _Term) -> None:
        expired = term.coordinator.expire(self.clock.now_ms())
        for member in expired:
            log.info("consumer group %r: member %s removed (%s timeout)", member.group_id,
                     member.member_id, member.reason)
        for group_id in sorted({member.group_id for member in expired}):
            await self._persist(term, group_id)

    async def _expire_forever(self, term: _Term) -> None:
        interval = min(EXPIRY_CHECK_MAX_S, self.config.session_timeout_ms / 4000)
        while True:
            await asyncio.sleep(interval)
            try:
                await self._expire(term)
            except Exception:
                log.exception("expiring consumer group members failed")
