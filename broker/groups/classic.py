"""Kafka's classic consumer-group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), as
Kafka's GroupCoordinator runs it, as a pure state machine.

Why a second coordinator beside ``GroupCoordinator``: Kafka clients in their default mode
(kafka-python, aiokafka, confluent-kafka/librdkafka) speak the classic protocol, in which the
coordinator assigns nothing: it gathers the members (JoinGroup), elects a leader member and
hands it every member's subscription metadata, then relays the assignment the leader computed
(SyncGroup) to each member. The metadata and assignments are opaque bytes here.

Theory of operation (Kafka's states, ``ClassicState``):

- ``Empty``: no members. A JoinGroup moves the group to ``PreparingRebalance``.
- ``PreparingRebalance``: every known member must (re)send JoinGroup. The rebalance completes
  when all have (and no member id handed out by MEMBER_ID_REQUIRED is still unused), or at the
  rebalance deadline (the largest rebalance timeout of the members), when members that did not
  rejoin are dropped. Completing it starts the next generation: generation id + 1, the protocol
  every member supports with the most first-choice votes, a leader (the previous one if it
  rejoined); each member's JoinGroup is answered, the leader's with all members' metadata.
- ``CompletingRebalance``: waiting for the leader's SyncGroup. Followers' SyncGroups wait; the
  leader's stores the assignment and answers everyone waiting; the group is ``Stable``.
- ``Stable``: heartbeats answer NONE; a SyncGroup answers the member's assignment at once.
  A member joining, leaving, expiring, changing its protocols, or the leader rejoining starts a
  new rebalance (heartbeats then answer REBALANCE_IN_PROGRESS, which makes members rejoin).
- ``Dead``: never stored; a group with no members stays ``Empty`` (it keeps its generation, so
  generation ids of a group id only rise while the process lives).

Sans-I/O: JoinGroup and SyncGroup answers are usually not known when the request arrives. The
caller passes an opaque ``token`` with each; a call returns either the answer or ``PENDING``,
and answers completed later (by this or any other call, or by time) are queued as
``Completed(token, response)`` for ``take_events``. No clock is read: every call gets
``now_ms``; ``next_deadline`` says when ``advance`` must be called next (session expiry,
rebalance and sync deadlines, unused member ids).

Members whose JoinGroup or SyncGroup is waiting are kept alive (as Kafka does); others must
heartbeat (or join, sync, commit) within their session timeout. Members that got their
JoinGroup answer must send SyncGroup within the rebalance timeout, else they are dropped and
the group rebalances (Kafka's KIP-345 "pending sync" rule), so one silent member cannot stall
a generation.

Static membership (``group.instance.id``, KIP-345) is refused with UNSUPPORTED_VERSION, the
answer Kafka brokers without it gave: clients fall back to a dynamic member id when the user
did not ask for one, and fail loudly when they did. Not thread-safe: one owner calls it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ...protocol.errors import ErrorCode
from .classic_views import (
    PENDING,
    ClassicConfig,
    ClassicGroupDescription,
    ClassicMemberDescription,
    ClassicState,
    Completed,
    JoinResponse,
    SyncResponse,
    Pending,
)

__all__ = ["PENDING", "ClassicConfig", "ClassicGroupDescription", "ClassicGroups",
           "ClassicMemberDescription", "ClassicState", "Completed", "JoinResponse",
           "SyncResponse"]


Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's preference order


@dataclass(eq=False)
class _Member:
    member_id: str
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: Protocols
    last_seen_ms: int
    client_host: str = ""
    join_token: object = None  # set while its JoinGroup waits
    sync_token: object = None  # set while its SyncGroup waits
    assignment: bytes = b""

    def metadata(self, protocol: str) -> bytes:
        return next(data for name, data in self.protocols if name == protocol)


@dataclass(eq=False)
class _Group:
    group_id: str
    state: ClassicState = ClassicState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, _Member] = field(default_factory=dict)  # join order
    unused_ids: dict[str, int] = field(default_factory=dict)   # MEMBER_ID_REQUIRED -> deadline
    join_deadline_ms: int | None = None
    sync_deadline_ms: int | None = None
    unsynced: set[str] = field(default_factory=set)  # answered JoinGroup, no SyncGroup yet

    def candidate_protocols(self) -> set[str]:
        names = None
        for member in self.members.values():
            own = {name for name, _ in member.protocols}
            names = own if names is None else names & own
        return names or set()


def _new_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class ClassicGroups:
    """Every classic group this broker coordinates.

    Args:
        config: session timeout bounds and the group size limit.
        member_id_factory: makes a member id from a client id (Kafka: client id + "-" + a
            UUID; tests pass a counter).
    """

    def __init__(self, config: ClassicConfig | None = None,
                 member_id_factory: Callable[[str], str] = _new_member_id) -> None:
        self.config = config or ClassicConfig()
        self._groups: dict[str, _Group] = {}
        self._new_member_id = member_id_factory
        self._events: list[Completed] = []

    # -- events and time --------------------------------------------------------------------

    def take_events(self) -> list[Completed]:
        """The JoinGroup/SyncGroup answers completed since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def next_deadline(self) -> int | None:
        """The earliest time ``advance`` has something to do (None: nothing is timed)."""
        deadlines = []
        for group in self._groups.values():
            deadlines.extend(group.unused_ids.values())
            if group.join_deadline_ms is not None:
                deadlines.append(group.join_deadline_ms)
            if group.sync_deadline_ms is not None:
                deadlines.append(group.sync_deadline_ms)
            deadlines.extend(member.last_seen_ms + member.session_timeout_ms
                             for member in group.members.values() if not _kept_alive(member))
        return min(deadlines, default=None)

    def advance(self, now_ms: int) -> list[tuple[str, str]]:
        """Apply every deadline at or before ``now_ms``: unused member ids lapse, silent
        members and members that never synced are removed, rebalances whose time is up
        complete without the members that did not rejoin.

        Returns:
            (group id, member id) of every member removed, for the caller's log.
        """
        removed = []
        for group in list(self._groups.values()):
            for member_id, deadline in list(group.unused_ids.items()):
                if deadline <= now_ms:
                    del group.unused_ids[member_id]
            gone = [m.member_id for m in group.members.values()
                    if not _kept_alive(m) and m.last_seen_ms + m.session_timeout_ms <= now_ms]
            if group.sync_deadline_ms is not None and group.sync_deadline_ms <= now_ms:
                gone.extend(sorted(group.unsynced - set(gone)))
                group.sync_deadline_ms = None
                group.unsynced.clear()
            for member_id in gone:
                self._remove(group, member_id)
                removed.append((group.group_id, member_id))
            if gone:
                self._membership_changed(group, now_ms)
            if (group.state is ClassicState.PREPARING_REBALANCE
                    and group.join_deadline_ms is not None and group.join_deadline_ms <= now_ms):
                removed.extend((group.group_id, member_id)
                               for member_id in self._complete_join(group, now_ms))
            else:
                self._try_complete_join(group, now_ms)
        return removed

    # -- JoinGroup --------------------------------------------------------------------------

    def join(self, group_id: str, member_id: str, client_id: str, session_timeout_ms: int,
             rebalance_timeout_ms: int, protocol_type: str, protocols: Iterable[tuple[str, bytes]],
             require_known_member_id: bool, group_instance_id: str | None, token: object,
             now_ms: int, client_host: str = "") -> JoinResponse | Pending:
        """One JoinGroup. ``require_known_member_id`` (JoinGroup v4+): a member without an id
        gets one with MEMBER_ID_REQUIRED and must join again with it.

        Returns:
            a JoinResponse now (an error; or a member rejoining a settled generation
            unchanged), or PENDING: the answer comes as ``Completed(token, ...)``.
        """
        protocols = tuple((str(name), bytes(data)) for name, data in protocols)
        if not group_id:
            return JoinResponse(ErrorCode.INVALID_GROUP_ID, member_id)
        if group_instance_id is not None:
            return JoinResponse(ErrorCode.UNSUPPORTED_VERSION, member_id)
        config = self.config
        if not config.min_session_timeout_ms <= session_timeout_ms <= config.max_session_timeout_ms:
            return JoinResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        if (not protocol_type or not protocols
                or len({name for name, _ in protocols}) != len(protocols)):
            return JoinResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        group = self._groups.get(group_id) or _Group(group_id)
        if group.members and (protocol_type != group.protocol_type or not (
                group.candidate_protocols() & {name for name, _ in protocols})):
            return JoinResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        rebalance_timeout_ms = max(rebalance_timeout_ms, 0)
        if not member_id:
            if len(group.members) + len(group.unused_ids) >= config.group_max_size:
                return JoinResponse(ErrorCode.GROUP_MAX_SIZE_REACHED, member_id)
            member_id = self._fresh_member_id(group, client_id)
            self._groups[group_id] = group
            if require_known_member_id:
                group.unused_ids[member_id] = now_ms + session_timeout_ms
                return JoinResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        elif member_id in group.unused_ids:
            del group.unused_ids[member_id]
        elif member_id not in group.members:
            return JoinResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        member = group.members.get(member_id)
        if member is None:
            group.protocol_type = protocol_type
            member = _Member(member_id, client_id, session_timeout_ms, rebalance_timeout_ms,
                             protocols, now_ms, client_host)
            group.members[member_id] = member
            self._await_join(member, token)
            self._rebalance(group, now_ms)
            return PENDING
        return self._rejoin(group, member, session_timeout_ms, rebalance_timeout_ms, protocols,
                            token, now_ms)

    def _rejoin(self, group: _Group, member: _Member, session_timeout_ms: int,
                rebalance_timeout_ms: int, protocols: Protocols, token: object,
                now_ms: int) -> JoinResponse | Pending:
        member.last_seen_ms = now_ms
        member.session_timeout_ms = session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_ms
        changed = protocols != member.protocols
        member.protocols = protocols
        settled = group.state in (ClassicState.COMPLETING_REBALANCE, ClassicState.STABLE)
        leader_in_stable = (group.state is ClassicState.STABLE
                            and member.member_id == group.leader)
        if settled and not changed and not leader_in_stable:
            # A lost JoinGroup answer, asked again: the generation is unchanged.
            return self._join_answer(group, member)
        self._await_join(member, token)
        self._rebalance(group, now_ms)
        return PENDING

    def _fresh_member_id(self, group: _Group, client_id: str) -> str:
        for _ in range(8):  # a factory that keeps repeating ids is a bug, not a retry case
            member_id = self._new_member_id(client_id)
            if member_id and member_id not in group.members and member_id not in group.unused_ids:
                return member_id
        raise AssertionError("the member id factory keeps returning ids in use")

    def _await_join(self, member: _Member, token: object) -> None:
        if member.join_token is not None:  # superseded by the member's newer JoinGroup
            self._events.append(Completed(member.join_token,
                                          JoinResponse(ErrorCode.REBALANCE_IN_PROGRESS,
                                                       member.member_id)))
        member.join_token = token

    def _rebalance(self, group: _Group, now_ms: int) -> None:
        """Start a rebalance (or, if one is under way, see whether it can complete)."""
        if group.state is not ClassicState.PREPARING_REBALANCE:
            if group.state is ClassicState.COMPLETING_REBALANCE:
                for member in group.members.values():
                    self._answer_sync(member, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS),
                                      now_ms)
            group.state = ClassicState.PREPARING_REBALANCE
            group.sync_deadline_ms = None
            group.unsynced.clear()
            group.join_deadline_ms = now_ms + max(
                (m.rebalance_timeout_ms for m in group.members.values()), default=0)
        self._try_complete_join(group, now_ms)

    def _try_complete_join(self, group: _Group, now_ms: int) -> None:
        if (group.state is ClassicState.PREPARING_REBALANCE and not group.unused_ids
                and all(m.join_token is not None for m in group.members.values())):
            self._complete_join(group, now_ms)

    def _complete_join(self, group: _Group, now_ms: int) -> list[str]:
        """Drop the members that did not rejoin (their ids are returned), start the next
        generation, answer the JoinGroups."""
        dropped = [m.member_id for m in group.members.values() if m.join_token is None]
        for member_id in dropped:
            self._remove(group, member_id)
        group.generation_id += 1
        group.join_deadline_ms = None
        if not group.members:
            group.state = ClassicState.EMPTY
            group.protocol_name = group.protocol_type = group.leader = None
            return dropped
        group.protocol_name = self._select_protocol(group)
        if group.leader not in group.members:
            group.leader = next(iter(group.members))
        group.state = ClassicState.COMPLETING_REBALANCE
        group.unsynced = set(group.members)
        group.sync_deadline_ms = now_ms + max(m.rebalance_timeout_ms
                                              for m in group.members.values())
        for member in group.members.values():
            member.last_seen_ms = now_ms
            member.assignment = b""
            token, member.join_token = member.join_token, None
            self._events.append(Completed(token, self._join_answer(group, member)))
        return dropped

    @staticmethod
    def _select_protocol(group: _Group) -> str:
        """Kafka's rule: among the protocols every member supports, the one most members
        list first among those; a tie goes to the earliest in the leader's (or first
        member's) preference, so the choice is deterministic."""
        candidates = group.candidate_protocols()
        votes: dict[str, int] = {}
        for member in group.members.values():
            choice = next(name for name, _ in member.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first = group.members.get(group.leader) or next(iter(group.members.values()))
        order = [name for name, _ in first.protocols if name in candidates]
        return max(order, key=lambda name: (votes.get(name, 0), -order.index(name)))

    def _join_answer(self, group: _Group, member: _Member) -> JoinResponse:
        members = ()
        if member.member_id == group.leader:
            members = tuple((m.member_id, m.metadata(group.protocol_name))
                            for m in group.members.values())
        return JoinResponse(ErrorCode.NONE, member.member_id, group.generation_id,
                            group.protocol_type, group.protocol_name, group.leader or "",
                            members)

    # -- SyncGroup --------------------------------------------------------------------------

    def sync(self, group_id: str, generation_id: int, member_id: str,
             protocol_type: str | None, protocol_name: str | None,
             assignments: Mapping[str, bytes], token: object,
             now_ms: int) -> SyncResponse | Pending:
        """One SyncGroup. ``assignments`` is what the leader sends (ignored from others).

        Returns:
            a SyncResponse now (an error, or the member's assignment in a Stable group), or
            PENDING until the leader's SyncGroup arrives (or a rebalance cancels it).
        """
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return SyncResponse(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return SyncResponse(ErrorCode.ILLEGAL_GENERATION)
        if ((protocol_type is not None and protocol_type != group.protocol_type)
                or (protocol_name is not None and protocol_name != group.protocol_name)):
            return SyncResponse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member.last_seen_ms = now_ms
        if group.state is ClassicState.PREPARING_REBALANCE:
            return SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS)
        group.unsynced.discard(member_id)
        if not group.unsynced:
            group.sync_deadline_ms = None
        if group.state is ClassicState.STABLE:
            return self._sync_answer(group, member)
        self._answer_sync(member, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS),  # superseded
                          now_ms)
        member.sync_token = token
        if member_id == group.leader:
            for each in group.members.values():
                each.assignment = bytes(assignments.get(each.member_id, b""))
            group.state = ClassicState.STABLE
            for each in group.members.values():
                self._answer_sync(each, self._sync_answer(group, each), now_ms)
        return PENDING

    @staticmethod
    def _sync_answer(group: _Group, member: _Member) -> SyncResponse:
        return SyncResponse(ErrorCode.NONE, group.protocol_type, group.protocol_name,
                            member.assignment)

    def _answer_sync(self, member: _Member, response: SyncResponse, now_ms: int) -> None:
        """Answer a waiting SyncGroup; the member's session restarts now (it could not
        heartbeat while it waited, as Kafka reschedules the member's expiry on answering)."""
        if member.sync_token is not None:
            self._events.append(Completed(member.sync_token, response))
            member.sync_token = None
            member.last_seen_ms = max(member.last_seen_ms, now_ms)

    # -- Heartbeat, LeaveGroup, commits -----------------------------------------------------

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  now_ms: int) -> ErrorCode:
        """NONE; REBALANCE_IN_PROGRESS (rejoin); UNKNOWN_MEMBER_ID; ILLEGAL_GENERATION."""
        group = self._groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        member.last_seen_ms = now_ms
        if group.state is ClassicState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, group_id: str, member_ids: Iterable[str], now_ms: int) -> list[ErrorCode]:
        """LeaveGroup of one member (v0-v2) or a batch (v3+): a code per member id."""
        group = self._groups.get(group_id)
        codes = []
        changed = False
        for member_id in member_ids:
            if group is not None and member_id in group.unused_ids:
                del group.unused_ids[member_id]
                codes.append(ErrorCode.NONE)
                changed = True
            elif group is not None and member_id in group.members:
                self._remove(group, member_id)
                codes.append(ErrorCode.NONE)
                changed = True
            else:
                codes.append(ErrorCode.UNKNOWN_MEMBER_ID)
        if changed:
            self._membership_changed(group, now_ms)
        return codes

    def validate_commit(self, group_id: str, generation_id: int, member_id: str,
                        now_ms: int) -> ErrorCode:
        """May this OffsetCommit store offsets? Kafka's rules: generation -1 (a client outside
        group management) only while the group has no members; a member's commit needs its
        group's current generation and counts as a heartbeat.

        Returns:
            NONE; ILLEGAL_GENERATION (unknown group and a generation id, or another generation);
            UNKNOWN_MEMBER_ID; REBALANCE_IN_PROGRESS (awaiting the leader's assignment).
        """
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.NONE if generation_id < 0 else ErrorCode.ILLEGAL_GENERATION
        if generation_id < 0 and group.state is ClassicState.EMPTY:
            return ErrorCode.NONE
        if group.state is ClassicState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        member.last_seen_ms = now_ms
        return ErrorCode.NONE

    def _remove(self, group: _Group, member_id: str) -> None:
        member = group.members.pop(member_id)
        if member.join_token is not None:
            self._events.append(Completed(member.join_token,
                                          JoinResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id)))
            member.join_token = None
        self._answer_sync(member, SyncResponse(ErrorCode.UNKNOWN_MEMBER_ID), member.last_seen_ms)
        group.unsynced.discard(member_id)
        if group.leader == member_id:
            group.leader = next((m.member_id for m in group.members.values()
                                 if m.join_token is not None), None)

    def _membership_changed(self, group: _Group, now_ms: int) -> None:
        if group.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
            self._rebalance(group, now_ms)
        else:
            self._try_complete_join(group, now_ms)

    # -- views ------------------------------------------------------------------------------

    def has_members(self, group_id: str) -> bool:
        """Whether the classic group is in use (members, or member ids handed out): a KIP-848
        member may not join it then (INCONSISTENT_GROUP_PROTOCOL)."""
        group = self._groups.get(group_id)
        return group is not None and bool(group.members or group.unused_ids)

    def describe(self, group_id: str) -> ClassicGroupDescription:
        group = self._groups.get(group_id)
        if group is None:
            return ClassicGroupDescription(group_id, ClassicState.DEAD, -1, None, None, None, ())
        return ClassicGroupDescription(
            group.group_id, group.state, group.generation_id, group.protocol_type,
            group.protocol_name, group.leader, tuple(
                ClassicMemberDescription(
                    m.member_id, m.client_id, m.session_timeout_ms, m.last_seen_ms,
                    m.join_token is not None, m.sync_token is not None, m.client_host,
                    m.metadata(group.protocol_name) if group.protocol_name else b"",
                    m.assignment)
                for m in group.members.values()))

    def forget(self, group_id: str) -> bool:
        """DeleteGroups: drop a group not in use (``has_members``), so it is listed no more."""
        return not self.has_members(group_id) and self._groups.pop(group_id, None) is not None

    def group_ids(self) -> list[str]:
        return sorted(self._groups)


def _kept_alive(member: _Member) -> bool:
    """A member waiting for its JoinGroup or SyncGroup answer cannot heartbeat meanwhile."""
    return member.join_token is not None or member.sync_token is not None
