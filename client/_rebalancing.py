"""How a group member's consumer applies a change of its partitions (a ``Rebalance``).

Why a separate step API (begin, listener calls, end) rather than one coroutine: the blocking
``Consumer`` must run the user's rebalance listener on the user's thread, not on its loop
thread, so it calls ``begin`` and ``end`` on the loop and the listener in between; the
``AsyncConsumer`` does the same three steps inline. In between, the partitions being revoked
are still readable and committable, and the newly assigned ones are already assigned (the
listener may ``seek`` them).
"""

from __future__ import annotations

import inspect
import logging
import time

from ._membership import Rebalance
from .errors import TslogError

log = logging.getLogger("tslog.client.consumer")

_NOTHING = frozenset()


class RebalancingMixin:
    """The group-member side of ``AsyncConsumer`` (which provides the attributes used)."""

    async def _rebalance_begin(self) -> Rebalance | None:
        """At the start of a poll round: restart the poll timer, auto-commit when due, and
        take the pending change, if any; raises a fatal group error (e.g. the group is full).
        Revoked partitions' positions are committed first (with auto-commit)."""
        membership = self._membership
        if membership is None:
            return None
        membership.start()
        membership.polled()
        if (self.enable_auto_commit and membership.epoch > 0
                and time.monotonic() >= self._next_auto_commit):
            self._next_auto_commit = time.monotonic() + self._auto_commit_s
            await self._commit_quietly(membership.owned)
        change = membership.plan()
        if change is None:
            return None
        if change.revoked and self.enable_auto_commit:
            await self._commit_quietly(change.revoked)
        if change.assigned:
            self._set_assignment(set(self._states) | change.assigned)
        return change

    def _rebalance_end(self, change: Rebalance) -> None:
        """Stop reading what was revoked or lost; the next heartbeat reports it."""
        self._set_assignment(set(change.target))
        if self._membership is not None:
            self._membership.applied(change)

    def _listener_calls(self, change: Rebalance | None) -> list:
        """The listener methods to call for ``change``, with their partitions, in order."""
        listener = self._listener
        if listener is None or change is None:
            return []
        calls = [(listener.on_partitions_lost, change.lost),
                 (listener.on_partitions_revoked, change.revoked),
                 (listener.on_partitions_assigned, change.assigned)]
        return [(method, set(partitions)) for method, partitions in calls if partitions]

    async def _run_listener(self, change: Rebalance | None) -> None:
        for method, partitions in self._listener_calls(change):
            result = method(partitions)
            if inspect.isawaitable(result):
                await result

    async def _leave_plan(self) -> Rebalance | None:
        """Giving every partition up (close, unsubscribe): commit them with auto-commit and
        return the change for the listener; None when nothing is owned."""
        membership = self._membership
        if membership is None or not membership.owned:
            return None
        owned = membership.owned
        if self.enable_auto_commit:
            await self._commit_quietly(owned)
        return Rebalance(_NOTHING, owned, _NOTHING, _NOTHING)

    async def _leave_group(self) -> None:
        membership, self._membership = self._membership, None
        if membership is not None:
            await membership.leave()
            self._set_assignment(set())

    async def _commit_quietly(self, partitions) -> None:
        """Auto-commit: a failure is logged, not raised (the records after the last
        accepted commit are read again by whoever reads the partition next)."""
        offsets = self._positions(partitions)
        if not offsets:
            return
        try:
            await self.commit(offsets)
        except TslogError as exc:
            log.warning("group %r: auto-commit of %d partitions failed: %r",
                        self.group_id, len(offsets), exc)
