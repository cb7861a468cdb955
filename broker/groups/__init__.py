"""Consumer groups: the coordinator's pure state machine and its partition assignors.

The coordinator (``GroupCoordinator``) does no I/O and reads no clock; a server adapter
feeds it heartbeats, commits to validate, topic changes and the time, and persists its
``to_record()``. See docs/groups.md for the states, epochs and reconciliation rules.
"""

from .assignors import ASSIGNORS, Assignment, Partition, range_assign, uniform_assign
from .coordinator import GroupCoordinator
from .views import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    CoordinatorConfig,
    ExpiredMember,
    GroupDescription,
    GroupListing,
    GroupState,
    HeartbeatResponse,
    MemberDescription,
    MemberState,
)

__all__ = [
    "ASSIGNORS",
    "JOIN_EPOCH",
    "LEAVE_EPOCH",
    "Assignment",
    "CoordinatorConfig",
    "ExpiredMember",
    "GroupCoordinator",
    "GroupDescription",
    "GroupListing",
    "GroupState",
    "HeartbeatResponse",
    "MemberDescription",
    "MemberState",
    "Partition",
    "range_assign",
    "uniform_assign",
]
