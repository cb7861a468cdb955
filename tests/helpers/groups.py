"""A consumer as the group coordinator's tests drive it: it remembers its id, epoch and the
partitions it actually reads, and follows the protocol (reads what it is given at once,
gives up what it is told to give up, and reports that in its next heartbeat)."""

from __future__ import annotations

import itertools

from tslog.broker.groups import GroupCoordinator, HeartbeatResponse
from tslog.protocol.errors import ErrorCode


def counter_ids(prefix: str = "m"):
    """Deterministic member ids for coordinators under test."""
    numbers = itertools.count()
    return lambda: f"{prefix}{next(numbers)}"


class SimMember:
    def __init__(self, group_id: str, topics):
        self.group_id = group_id
        self.topics = frozenset(topics)
        self.member_id = ""
        self.epoch = 0
        self.owned: frozenset = frozenset()  # what this consumer reads right now
        self.given: frozenset = frozenset()  # the last assignment the coordinator sent

    def join(self, coordinator: GroupCoordinator, now_ms: int) -> HeartbeatResponse:
        response = coordinator.heartbeat(self.group_id, self.member_id, 0, sorted(self.topics),
                                         None, now_ms)
        self._apply(response, revoke=True)
        return response

    def heartbeat(self, coordinator: GroupCoordinator, now_ms: int, *, revoke: bool = True,
                  topics=None) -> HeartbeatResponse:
        """One heartbeat. ``revoke``: the consumer has finished giving up what it was told to
        give up, so it reports owning only what it was given; otherwise it still reads them."""
        if revoke:
            self.owned = self.owned & self.given
        if topics is not None:
            self.topics = frozenset(topics)
        response = coordinator.heartbeat(self.group_id, self.member_id, self.epoch,
                                         None if topics is None else sorted(self.topics),
                                         sorted(self.owned), now_ms)
        self._apply(response, revoke=False)
        return response

    def leave(self, coordinator: GroupCoordinator, now_ms: int) -> HeartbeatResponse:
        response = coordinator.heartbeat(self.group_id, self.member_id, -1, None, None, now_ms)
        self.owned = self.given = frozenset()
        return response

    def _apply(self, response: HeartbeatResponse, revoke: bool) -> None:
        if response.error is not ErrorCode.NONE:
            # fenced or unknown: a consumer drops everything and must rejoin
            self.owned = self.given = frozenset()
            return
        self.member_id = response.member_id
        self.epoch = response.member_epoch
        self.given = response.assignment
        self.owned = (self.owned | response.assignment)
        if revoke:
            self.owned &= response.assignment


def settle(coordinator: GroupCoordinator, members, now_ms: int, rounds: int = 4) -> None:
    """Every member heartbeats ``rounds`` times in turn, giving up promptly."""
    for _ in range(rounds):
        for member in members:
            member.heartbeat(coordinator, now_ms)
