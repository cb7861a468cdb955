"""``ClassicGroupService``: Kafka's classic consumer groups (``groups.classic``) as a broker runs
them: the clock, the waiting JoinGroup/SyncGroup requests, and the timer.

The state machine answers a JoinGroup or SyncGroup that must wait with PENDING and later emits
the answer as an event; here each waiting request is an asyncio future keyed by the token the
machine was given, resolved when its event comes out. After every call, and whenever the
machine's next deadline passes, the events are delivered. A request whose client went away
leaves its future cancelled; its answer is dropped when it comes.

Membership lives in memory only, as in Kafka (members rejoin after a coordinator restart or
move: their heartbeats get UNKNOWN_MEMBER_ID or NOT_COORDINATOR and they join again); the
committed offsets are the durable part and go through ``CommittedOffsets``, the store the
KIP-848 groups use. One group id is one kind of group: ``native_busy`` tells whether tslog's
own coordinator has members in a group id (a classic join is then refused with
INCONSISTENT_GROUP_PROTOCOL), and ``has_members`` answers the reverse question for it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping

from tslog.protocol.errors import ErrorCode

from .classic import (
    PENDING,
    ClassicConfig,
    ClassicGroupDescription,
    ClassicGroups,
    JoinResponse,
    SyncResponse,
)
from .clock import Clock

log = logging.getLogger("tslog.broker.groups")

# The timer sleeps until the machine's next deadline, but never longer than this: a request
# may bring a deadline earlier meanwhile (no wake-up signal needed; lateness is bounded).
TIMER_MAX_S = 0.2


class ClassicGroupService:
    """Owner: the event loop. ``start`` runs the timer; ``stop`` ends it and answers every
    waiting request with COORDINATOR_NOT_AVAILABLE (the client finds the coordinator again).

    Args:
        native_busy: group id -> whether a KIP-848 group of that id has members.
    """

    def __init__(self, clock: Clock, native_busy: Callable[[str], bool] = lambda _: False,
                 config: ClassicConfig | None = None) -> None:
        self.clock = clock
        self.native_busy = native_busy
        self.machine = ClassicGroups(config)
        self._waiting: dict[int, asyncio.Future] = {}
        self._tokens = itertools.count(1)
        self._timer: asyncio.Task | None = None

    def has_members(self, group_id: str) -> bool:
        return self.machine.has_members(group_id)

    def describe(self, group_id: str) -> ClassicGroupDescription:
        """The group's state and members (DEAD if unknown), for DescribeGroups."""
        return self.machine.describe(group_id)

    def group_ids(self) -> list[str]:
        """Every classic group's id, with members or not, sorted."""
        return self.machine.group_ids()

    def forget(self, group_id: str) -> bool:
        """Drop a group without members once its offsets are deleted (DeleteGroups)."""
        return self.machine.forget(group_id)

    # -- the timer ---------------------------------------------------------------------------

    def start(self) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().create_task(self._run_timer(),
                                                                 name="classic-groups")

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
            self._timer = None
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(_NotAvailable())
        self._waiting.clear()

    async def _run_timer(self) -> None:
        while True:
            deadline = self.machine.next_deadline()
            wait_s = TIMER_MAX_S
            if deadline is not None:
                wait_s = min(wait_s, max(0.0, (deadline - self.clock.now_ms()) / 1000))
            await asyncio.sleep(wait_s)
            try:
                self.advance()
            except Exception:  # a bug must not stop every group's clock
                log.exception("advancing the classic consumer groups failed")

    def advance(self) -> None:
        """Apply the deadlines due now and deliver what they answered (the timer calls it;
        a test may too)."""
        for group_id, member_id in self.machine.advance(self.clock.now_ms()):
            log.info("classic consumer group %r: member %s removed", group_id, member_id)
        self._deliver()

    def _deliver(self) -> None:
        for event in self.machine.take_events():
            future = self._waiting.pop(event.token, None)
            if future is not None and not future.done():
                future.set_result(event.response)

    async def _answer(self, token: int, answer):
        if answer is not PENDING:
            self._deliver()
            return answer
        future = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        self._deliver()
        try:
            return await future
        finally:
            self._waiting.pop(token, None)

    # -- requests ----------------------------------------------------------------------------

    async def join(self, group_id: str, member_id: str, client_id: str, session_timeout_ms: int,
                   rebalance_timeout_ms: int, protocol_type: str,
                   protocols: Iterable[tuple[str, bytes]], require_known_member_id: bool,
                   group_instance_id: str | None, client_host: str = "") -> JoinResponse:
        """A JoinGroup, answered when the rebalance completes (or at once with an error)."""
        if self.native_busy(group_id):
            return JoinResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        token = next(self._tokens)
        answer = self.machine.join(group_id, member_id, client_id, session_timeout_ms,
                                   rebalance_timeout_ms, protocol_type, protocols,
                                   require_known_member_id, group_instance_id, token,
                                   self.clock.now_ms(), client_host)
        try:
            return await self._answer(token, answer)
        except _NotAvailable:
            return JoinResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)

    async def sync(self, group_id: str, generation_id: int, member_id: str,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: Mapping[str, bytes]) -> SyncResponse:
        """A SyncGroup, answered once the leader's assignment is in."""
        token = next(self._tokens)
        answer = self.machine.sync(group_id, generation_id, member_id, protocol_type,
                                   protocol_name, assignments, token, self.clock.now_ms())
        try:
            return await self._answer(token, answer)
        except _NotAvailable:
            return SyncResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    def heartbeat(self, group_id: str, generation_id: int, member_id: str) -> ErrorCode:
        return self.machine.heartbeat(group_id, generation_id, member_id, self.clock.now_ms())

    def leave(self, group_id: str, member_ids: list[str]) -> list[ErrorCode]:
        codes = self.machine.leave(group_id, member_ids, self.clock.now_ms())
        self._deliver()
        return codes

    def validate_commit(self, group_id: str, generation_id: int, member_id: str) -> ErrorCode:
        return self.machine.validate_commit(group_id, generation_id, member_id,
                                            self.clock.now_ms())


class _NotAvailable(Exception):
    """The service stopped while a request waited."""
