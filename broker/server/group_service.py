"""``GroupService``: the consumer-group coordinator as a broker runs it.

The coordinator (``broker.groups``) is a pure state machine; this adapter gives it what it
cannot have itself: the clock, the topics' partition counts, a timer that expires silent
members, and durability. A heartbeat is answered only once the group's new state is on disk
(``group_state.GroupStateStore``), so a restart never hands out again what an answer gave
away; heartbeats that change nothing (the steady state: the record holds no heartbeat times)
write nothing. Writes of one group are serialised by a FIFO lock and always write the group's
newest state, so an older state never lands after a newer one.
"""

from __future__ import annotations

import asyncio
import logging

from tslog.protocol.errors import ErrorCode

from ..group_state import GroupStateStore
from ..groups import CoordinatorConfig, GroupCoordinator, HeartbeatResponse
from ..topics import TopicManager
from .clock import BrokerClock

log = logging.getLogger("tslog.broker.groups")

EXPIRY_CHECK_MAX_S = 1.0


class GroupService:
    """Owner: the event loop. Build it, then ``start()`` its expiry timer on the loop."""

    def __init__(self, store: GroupStateStore, topics: TopicManager, clock: BrokerClock,
                 config: CoordinatorConfig | None = None) -> None:
        self.store = store
        self.topics = topics
        self.clock = clock
        # The topics first: groups restored into a coordinator that knew none would all
        # move to a new epoch (a rebalance for nothing) at their first heartbeat.
        self.coordinator = GroupCoordinator(config, self._partition_counts())
        self._durable: dict[str, dict] = {}  # group id -> the record last written
        now_ms = clock.now_ms()
        for record in store.load():
            try:
                self.coordinator.restore_group(record, now_ms)
                self._durable[record["group_id"]] = record
            except (ValueError, KeyError, TypeError):
                log.exception("consumer group state of another format; ignoring it")
        self._locks: dict[str, asyncio.Lock] = {}
        self._timer: asyncio.Task | None = None

    @property
    def config(self) -> CoordinatorConfig:
        return self.coordinator.config

    def start(self) -> None:
        self._timer = asyncio.get_running_loop().create_task(self._expire_forever(),
                                                             name="group-expiry")

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
            self._timer = None

    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                        subscribed_topics, owned) -> HeartbeatResponse:
        """One member's heartbeat, answered once the group's resulting state is durable.

        A failed write answers COORDINATOR_NOT_AVAILABLE: the member retries the same
        heartbeat, which the coordinator accepts again (it keeps the previous epoch)."""
        self.coordinator.set_topics(self._partition_counts())
        answer = self.coordinator.heartbeat(group_id, member_id, member_epoch,
                                            subscribed_topics, owned, self.clock.now_ms())
        if answer.error is not ErrorCode.NONE:
            return answer
        if not await self._persist(group_id):
            return HeartbeatResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, answer.member_id,
                                     member_epoch, answer.heartbeat_interval_ms, None)
        return answer

    async def delete_group(self, group_id: str) -> ErrorCode:
        code = self.coordinator.delete_group(group_id)
        if code is ErrorCode.NONE and not await self._persist(group_id):
            return ErrorCode.KAFKA_STORAGE_ERROR
        return code

    def _partition_counts(self) -> dict[str, int]:
        return {name: meta.partitions for name, meta in self.topics.topics.items()}

    async def _persist(self, group_id: str) -> bool:
        """Write the group's newest state unless it is on disk already; False if the write
        failed (the state stays in memory and is written by the group's next change)."""
        async with self._locks.setdefault(group_id, asyncio.Lock()):
            record = self.coordinator.group_record(group_id)
            if record == self._durable.get(group_id):
                return True
            try:
                if record is None:
                    await asyncio.to_thread(self.store.delete, group_id)
                    self._durable.pop(group_id, None)
                else:
                    await asyncio.to_thread(self.store.write, group_id, record)
                    self._durable[group_id] = record
            except OSError as exc:
                log.error("writing the state of consumer group %r failed: %r", group_id, exc)
                return False
        return True

    async def expire_now(self) -> None:
        """Remove the members whose session or revocation time ran out, durably."""
        expired = self.coordinator.expire(self.clock.now_ms())
        for member in expired:
            log.info("consumer group %r: member %s removed (%s timeout)", member.group_id,
                     member.member_id, member.reason)
        for group_id in sorted({member.group_id for member in expired}):
            await self._persist(group_id)

    async def _expire_forever(self) -> None:
        interval = min(EXPIRY_CHECK_MAX_S, self.config.session_timeout_ms / 4000)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.expire_now()
            except Exception:
                log.exception("expiring consumer group members failed")
