"""What the coordinator answers: heartbeat responses, group descriptions, its settings.

All frozen, so a server can hand them to encoders and metrics without copying, and none
of them says which front door (tslog's protocol or Kafka's) a member came through.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...protocol.errors import ErrorCode
from .assignors import ASSIGNORS, Partition

JOIN_EPOCH = 0    # a heartbeat with this member epoch joins the group
LEAVE_EPOCH = -1  # ... and with this one leaves it


class GroupState(Enum):
    """EMPTY: no members. ASSIGNING: members or topics changed and the target is not yet
    recomputed. RECONCILING: some member has not reached its target. STABLE: every member
    owns exactly its target at the current epoch. DEAD: no such group (deleted or never)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(Enum):
    """STABLE: owns its target, or waits for its next heartbeat to learn a new one.
    UNREVOKED_PARTITIONS: was told to give partitions up and has not confirmed it.
    UNRELEASED_PARTITIONS: at the current epoch, waiting for others to release partitions
    of its target."""

    STABLE = "Stable"
    UNREVOKED_PARTITIONS = "UnrevokedPartitions"
    UNRELEASED_PARTITIONS = "UnreleasedPartitions"


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """``assignment`` is the full set the member may own after this heartbeat (None when
    ``error`` is not NONE); a member gives up whatever it owns outside it, then says so in
    its next heartbeat. ``member_epoch`` is the epoch to send next (-1 after a leave)."""

    error: ErrorCode
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: frozenset[Partition] | None


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    member_epoch: int
    state: MemberState
    subscribed_topics: frozenset[str]
    assigned: frozenset[Partition]  # may read now
    revoking: frozenset[Partition]  # told to give up, not yet confirmed (still its own)
    target: frozenset[Partition]    # where reconciliation is taking it
    client_id: str = ""    # the request header's client id when it joined
    client_host: str = ""  # the address it joined from


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error: ErrorCode  # GROUP_ID_NOT_FOUND (and state DEAD) for an unknown group
    group_id: str
    state: GroupState
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[MemberDescription, ...]


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    state: GroupState
    member_count: int


@dataclass(frozen=True, slots=True)
class ExpiredMember:
    """A member ``expire`` removed: ``reason`` is "session" (no heartbeat for longer than the
    session timeout) or "revocation" (did not give partitions up within the rebalance timeout)."""

    group_id: str
    member_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """The coordinator's settings (milliseconds). Kafka's defaults for its consumer protocol:
    group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms, and the
    client's max.poll.interval.ms as the time allowed to give partitions up."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    rebalance_timeout_ms: int = 300_000
    assignor: str = "uniform"
    group_size_max: int = 1_000  # members per group; more are refused (GROUP_MAX_SIZE_REACHED)

    def __post_init__(self) -> None:
        problems = []
        for name in ("session_timeout_ms", "heartbeat_interval_ms", "rebalance_timeout_ms",
                     "group_size_max"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            problems.append("heartbeat_interval_ms must be less than session_timeout_ms")
        if self.assignor not in ASSIGNORS:
            problems.append(f"assignor must be one of {sorted(ASSIGNORS)}")
        if problems:
            raise ValueError("; ".join(problems))


def error_response(error: ErrorCode, member_id: str, member_epoch: int,
                   heartbeat_interval_ms: int) -> HeartbeatResponse:
    assert error is not ErrorCode.NONE
    return HeartbeatResponse(error, member_id, member_epoch, heartbeat_interval_ms, None)
