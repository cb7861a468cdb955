"""What the classic group coordinator (``classic.py``) answers and how it is configured.

Frozen values, so the server shell can hand them to the Kafka adapters as they are; kept
apart from the state machine so that module holds only the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...protocol.errors import ErrorCode


class ClassicState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ClassicConfig:
    """Kafka's broker settings of the same names (``group.min.session.timeout.ms`` ...)."""

    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 1_000


@dataclass(frozen=True, slots=True)
class JoinResponse:
    """``members`` (member id, protocol metadata) is filled for the leader only."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResponse:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class Completed:
    """A JoinGroup or SyncGroup answered after the call that made it wait."""

    token: object
    response: JoinResponse | SyncResponse


@dataclass(frozen=True, slots=True)
class ClassicMemberDescription:
    member_id: str
    client_id: str
    session_timeout_ms: int
    last_seen_ms: int
    awaiting_join: bool
    awaiting_sync: bool
    client_host: str = ""  # the address it joined from (Kafka's DescribeGroups shows it)
    metadata: bytes = b""  # its subscription in the group's chosen protocol
    assignment: bytes = b""  # what the leader assigned it in the current generation


@dataclass(frozen=True, slots=True)
class ClassicGroupDescription:
    group_id: str
    state: ClassicState
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str | None
    members: tuple[ClassicMemberDescription, ...]


class Pending:
    __slots__ = ()

    def __repr__(self) -> str:
        return "PENDING"


PENDING = Pending()  # the answer will come as a ``Completed`` event
