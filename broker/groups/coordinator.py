"""The group coordinator: consumer groups with broker-side assignment (Kafka's KIP-848
"consumer" protocol), as a pure state machine.

No I/O, no clock, no threads: every call gets the time (``now_ms``, milliseconds on one
monotonic clock) and returns its answer, and nothing happens between calls. A server
adapter owns one ``GroupCoordinator``, serialises calls to it, persists ``to_record()``
after changes, calls ``expire`` on a timer and ``update_topic`` when a topic is created,
grown or deleted. It does not matter, and the coordinator never learns, which front door
(tslog's protocol or Kafka's) a member came through.

A member speaks only by heartbeats: ``heartbeat(group, member, epoch, topics, owned, now)``.

- epoch 0 joins (with the subscribed topics; an empty member id gets one generated);
- epoch -1 leaves, and frees the member's partitions at once;
- any other epoch must be the member's current one (or, if the member also reports owning
  nothing beyond what it was given, its previous one: the response that moved it on was
  lost), else the member is fenced and must rejoin with epoch 0;
- ``subscribed_topics`` / ``owned_partitions`` of None mean "unchanged since last time".

The group epoch rises whenever members, their subscriptions, or the metadata of subscribed
topics change; the next heartbeat recomputes the target assignment at that epoch, and each
member reconciles toward it (``_reconcile``). Members are removed when their session
expires or when they sit on partitions to give up for longer than the rebalance timeout;
``validate_commit`` refuses offsets from removed members and from stale epochs.

Not thread-safe: one owner calls it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping

from ...protocol.errors import ErrorCode
from ._describe import dead_group, describe_group, list_group
from ._model import RECORD_FORMAT, Group, Member, check_format
from ._reconcile import acknowledge, reconcile
from .assignors import ASSIGNORS, Partition
from .views import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    CoordinatorConfig,
    ExpiredMember,
    GroupDescription,
    GroupListing,
    HeartbeatResponse,
    error_response,
)


def _new_member_id() -> str:
    return uuid.uuid4().hex


class GroupCoordinator:
    """All consumer groups this broker coordinates, and the topic metadata they assign from.

    Args:
        config: timeouts, assignor and limits.
        topics: topic -> partition count, as the cluster knows it now.
        member_id_factory: makes ids for members that join without one (tests pass a
            counter; the default is a random UUID, so ids never repeat across failovers).
    """

    def __init__(self, config: CoordinatorConfig | None = None,
                 topics: Mapping[str, int] | None = None,
                 member_id_factory: Callable[[], str] = _new_member_id) -> None:
        self.config = config or CoordinatorConfig()
        self._assign = ASSIGNORS[self.config.assignor]
        self._topics: dict[str, int] = {t: n for t, n in (topics or {}).items() if n > 0}
        self._groups: dict[str, Group] = {}
        self._new_member_id = member_id_factory

    # -- heartbeats -------------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                  subscribed_topics: Iterable[str] | None,
                  owned_partitions: Iterable[Partition] | None,
                  now_ms: int, client: tuple[str, str] = ("", "")) -> HeartbeatResponse:
        """One consumer-group heartbeat (join, stay, or leave), answered at once. ``client``
        (client id, host) is kept from a join, for describe: operators find a member's
        process by it, as with Kafka's CLIENT-ID and HOST columns.

        Returns:
            the member's id and epoch to use next, the heartbeat interval, and the
            partitions it may own now; or an error (INVALID_GROUP_ID, INVALID_REQUEST,
            GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
            GROUP_MAX_SIZE_REACHED) and no assignment.
        """
        topics = None if subscribed_topics is None else frozenset(subscribed_topics)
        owned = (None if owned_partitions is None
                 else frozenset((str(t), int(p)) for t, p in owned_partitions))
        if not group_id:
            return self._error(ErrorCode.INVALID_GROUP_ID, member_id, member_epoch)
        if member_epoch < LEAVE_EPOCH:  # Kafka's -2 leaves a static membership: none here
            return self._error(ErrorCode.INVALID_REQUEST, member_id, member_epoch)
        if member_epoch == JOIN_EPOCH:
            return self._join(group_id, member_id, topics, now_ms, client)
        group = self._groups.get(group_id)
        if group is None:
            return self._error(ErrorCode.GROUP_ID_NOT_FOUND, member_id, member_epoch)
        member = group.members.get(member_id)
        if member is None:
            return self._error(ErrorCode.UNKNOWN_MEMBER_ID, member_id, member_epoch)
        if member_epoch == LEAVE_EPOCH:
            self._remove(group, member_id)
            return HeartbeatResponse(ErrorCode.NONE, member_id, LEAVE_EPOCH,
                                     self.config.heartbeat_interval_ms, frozenset())
        if not self._epoch_accepted(member, member_epoch, owned):
            return self._error(ErrorCode.FENCED_MEMBER_EPOCH, member_id, member_epoch)
        member.last_heartbeat_ms = now_ms
        if topics is not None and topics != member.subscribed_topics:
            member.subscribed_topics = topics
            group.group_epoch += 1
        if owned is not None:
            acknowledge(member, owned)
        return self._advance(group, member, now_ms)

    def _join(self, group_id: str, member_id: str, topics: frozenset[str] | None,
              now_ms: int, client: tuple[str, str]) -> HeartbeatResponse:
        if topics is None:  # a joining member must say what it subscribes to
            return self._error(ErrorCode.INVALID_REQUEST, member_id, JOIN_EPOCH)
        group = self._groups.get(group_id) or Group(group_id)
        if member_id in group.members:
            # A known member at epoch 0 lost its state (it was fenced, or restarted with the
            # same id); by the protocol it has dropped its partitions, so it starts afresh.
            self._remove(group, member_id)
        elif len(group.members) >= self.config.group_size_max:
            return self._error(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id, JOIN_EPOCH)
        member = Member(member_id or self._fresh_member_id(group), topics,
                        last_heartbeat_ms=now_ms, client_id=client[0], client_host=client[1])
        self._groups[group_id] = group
        group.members[member.member_id] = member
        group.group_epoch += 1
        return self._advance(group, member, now_ms)

    def _fresh_member_id(self, group: Group) -> str:
        for _ in range(8):  # a factory that keeps repeating ids is a bug, not a retry case
            member_id = self._new_member_id()
            if member_id and member_id not in group.members:
                return member_id
        raise AssertionError("the member id factory keeps returning ids in use")

    @staticmethod
    def _epoch_accepted(member: Member, member_epoch: int,
                        owned: frozenset[Partition] | None) -> bool:
        if member_epoch == member.member_epoch:
            return True
        # The response that moved the member on was lost: it retries with the epoch it
        # knows. Safe only if it claims nothing beyond what it was given.
        return (member_epoch == member.previous_member_epoch and owned is not None
                and owned <= member.owned())

    def _advance(self, group: Group, member: Member, now_ms: int) -> HeartbeatResponse:
        self._refresh_target(group)
        reconcile(group, member, now_ms, self.config.rebalance_timeout_ms)
        return HeartbeatResponse(ErrorCode.NONE, member.member_id, member.member_epoch,
                                 self.config.heartbeat_interval_ms, frozenset(member.assigned))

    def _refresh_target(self, group: Group) -> None:
        """Recompute the target if the group epoch moved past it (the group was ASSIGNING)."""
        if group.assignment_epoch == group.group_epoch:
            return
        subscriptions = {m.member_id: m.subscribed_topics for m in group.members.values()}
        counts = {topic: self._topics[topic] for topic in group.subscribed_topics()
                  if topic in self._topics}
        group.target = self._assign(subscriptions, counts, group.target)
        group.assignment_epoch = group.group_epoch

    def _remove(self, group: Group, member_id: str) -> None:
        """Drop a member and free its partitions now; the group must reassign them."""
        del group.members[member_id]
        group.target.pop(member_id, None)
        group.group_epoch += 1

    def _error(self, error: ErrorCode, member_id: str, member_epoch: int) -> HeartbeatResponse:
        return error_response(error, member_id, member_epoch, self.config.heartbeat_interval_ms)

    # -- time and metadata ------------------------------------------------------------------

    def expire(self, now_ms: int) -> list[ExpiredMember]:
        """Remove members whose last heartbeat is more than the session timeout before
        ``now_ms``, and members still holding partitions to give up past their rebalance
        deadline. Their partitions are free at once: a member gone silent may still be
        reading, which is why its commits are refused from now on (``validate_commit``)."""
        expired = []
        for group in self._groups.values():
            for member in sorted(group.members.values(), key=lambda m: m.member_id):
                if now_ms - member.last_heartbeat_ms > self.config.session_timeout_ms:
                    reason = "session"
                elif (member.revocation_deadline_ms is not None
                      and now_ms > member.revocation_deadline_ms):
                    reason = "revocation"
                else:
                    continue
                self._remove(group, member.member_id)
                expired.append(ExpiredMember(group.group_id, member.member_id, reason))
        return expired

    def update_topic(self, topic: str, partition_count: int) -> None:
        """A topic was created, grew, or was deleted (``partition_count`` 0): every group with a
        member subscribed to it moves to a new epoch and reassigns at its next heartbeat."""
        before = self._topics.get(topic, 0)
        if partition_count > 0:
            self._topics[topic] = partition_count
        else:
            self._topics.pop(topic, None)
        if before == max(partition_count, 0):
            return
        for group in self._groups.values():
            if topic in group.subscribed_topics():
                group.group_epoch += 1

    def set_topics(self, topics: Mapping[str, int]) -> None:
        """Replace the whole topic metadata (e.g. after loading, or a metadata refresh)."""
        for topic in sorted(set(self._topics) | set(topics)):
            self.update_topic(topic, topics.get(topic, 0))

    # -- commits, views, deletion -----------------------------------------------------------

    def validate_commit(self, group_id: str, member_id: str, member_epoch: int) -> ErrorCode:
        """May this member commit offsets for the group now?

        A commit outside group management (epoch below 0, as ``assign()`` consumers and
        admin tools send) is accepted while the group has no members, as Kafka does; for a
        member, the epoch must be exactly its current one.

        Returns:
            NONE; UNKNOWN_MEMBER_ID (removed, left, or never joined); STALE_MEMBER_EPOCH
            (an epoch it has moved past, or one never given to it: heartbeat, then retry).
        """
        group = self._groups.get(group_id)
        if member_epoch < 0 and (group is None or not group.members):
            return ErrorCode.NONE
        member = group.members.get(member_id) if group is not None else None
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def delete_group(self, group_id: str) -> ErrorCode:
        """Forget a group: NONE, GROUP_ID_NOT_FOUND, or NON_EMPTY_GROUP while it has members."""
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self._groups[group_id]
        return ErrorCode.NONE

    def describe(self, group_id: str) -> GroupDescription:
        """The group's state, epochs and members with their partitions; DEAD if unknown."""
        group = self._groups.get(group_id)
        if group is None:
            return dead_group(group_id, self.config.assignor)
        return describe_group(group, self.config.assignor)

    def list_groups(self) -> list[GroupListing]:
        return [list_group(self._groups[group_id]) for group_id in sorted(self._groups)]

    # -- persistence ------------------------------------------------------------------------

    def to_record(self) -> dict:
        """All groups and the topic metadata as plain, JSON-ready dicts (see ``_model``)."""
        return {
            "format": RECORD_FORMAT,
            "topics": dict(sorted(self._topics.items())),
            "groups": [self._groups[group_id].to_record() for group_id in sorted(self._groups)],
        }

    @classmethod
    def from_record(cls, record: Mapping, now_ms: int, config: CoordinatorConfig | None = None,
                    member_id_factory: Callable[[], str] = _new_member_id) -> GroupCoordinator:
        """Rebuild a coordinator, e.g. on the broker taking over a failed one's groups.

        Members keep their ids, epochs and partitions, so they carry on with their next
        heartbeat instead of rejoining; every session and revocation deadline restarts at
        ``now_ms``. Refresh the topics (``set_topics``) afterwards if they may have changed.

        Raises:
            ValueError: the record (or a group's in it) has another format.
        """
        check_format(record)
        coordinator = cls(config, {str(t): int(n) for t, n in record["topics"].items()},
                          member_id_factory)
        for item in record["groups"]:
            coordinator.restore_group(item, now_ms)
        return coordinator

    def group_record(self, group_id: str) -> dict | None:
        """One group's record, None if there is no such group. A store keeping one key per
        group rewrites only the group a call changed, not every group."""
        group = self._groups.get(group_id)
        return None if group is None else group.to_record()

    def restore_group(self, record: Mapping, now_ms: int) -> None:
        """Add, or replace, one group from its ``group_record`` (clock as in ``from_record``).

        Raises:
            ValueError: the record has another format.
        """
        group = Group.from_record(record, now_ms, self.config.rebalance_timeout_ms)
        self._groups[group.group_id] = group
