"""Read-only views of a group: its state, its members' states, a full description.

Kept apart from the coordinator because they only read: a state is derived from the epochs
and ownership sets every time it is asked for, never stored, so it cannot disagree with them.
"""

from __future__ import annotations

from ...protocol.errors import ErrorCode
from ._model import Group, Member
from .views import GroupDescription, GroupListing, GroupState, MemberDescription, MemberState


def group_state(group: Group) -> GroupState:
    if not group.members:
        return GroupState.EMPTY
    if group.group_epoch != group.assignment_epoch:
        return GroupState.ASSIGNING
    for member in group.members.values():
        if (member.revoking or member.member_epoch != group.assignment_epoch
                or member.assigned != group.target.get(member.member_id, frozenset())):
            return GroupState.RECONCILING
    return GroupState.STABLE


def member_state(group: Group, member: Member) -> MemberState:
    if member.revoking:
        return MemberState.UNREVOKED_PARTITIONS
    if (member.member_epoch == group.assignment_epoch
            and member.assigned != group.target.get(member.member_id, frozenset())):
        return MemberState.UNRELEASED_PARTITIONS
    return MemberState.STABLE


def describe_group(group: Group, assignor: str) -> GroupDescription:
    members = tuple(
        MemberDescription(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            state=member_state(group, member),
            subscribed_topics=member.subscribed_topics,
            assigned=frozenset(member.assigned),
            revoking=frozenset(member.revoking),
            target=group.target.get(member.member_id, frozenset()),
            client_id=member.client_id,
            client_host=member.client_host,
        )
        for member in sorted(group.members.values(), key=lambda m: m.member_id)
    )
    return GroupDescription(ErrorCode.NONE, group.group_id, group_state(group), group.group_epoch,
                            group.assignment_epoch, assignor, members)


def dead_group(group_id: str, assignor: str) -> GroupDescription:
    return GroupDescription(ErrorCode.GROUP_ID_NOT_FOUND, group_id, GroupState.DEAD, -1, -1,
                            assignor, ())


def list_group(group: Group) -> GroupListing:
    return GroupListing(group.group_id, group_state(group), len(group.members))
