"""Incremental reconciliation: one member's step from what it owns toward its target.

Theory of operation. A partition moves between members in two steps, each carried by a
heartbeat of the member concerned:

1. The previous owner is told to give it up: it leaves ``assigned`` for ``revoking``, and
   the member's epoch stays where it was. The member stops reading it, commits, and reports
   in a later heartbeat that it no longer owns it (``acknowledge``).
2. Only then is it free, and the next heartbeat of the member whose target holds it hands
   it over.

A partition is handed out only if no other member of the group has it in ``assigned`` or
``revoking``, so no two members own it at once at any moment, whatever order heartbeats
arrive in. Partitions that stay where they are never leave ``assigned``: their owner keeps
reading through a rebalance. A member with revocations outstanding is handed nothing new
(it first finishes giving up, as Kafka's consumer protocol does), and reaches the new
assignment epoch only once it holds nothing outside its target.
"""

from __future__ import annotations

from ._model import Group, Member
from .assignors import Partition


def acknowledge(member: Member, owned: frozenset[Partition]) -> None:
    """The member reports owning ``owned``: whatever it was giving up and no longer lists is
    released. Partitions it lists beyond what it was given change nothing."""
    member.revoking &= owned
    if not member.revoking:
        member.revocation_deadline_ms = None


def reconcile(group: Group, member: Member, now_ms: int, rebalance_timeout_ms: int) -> None:
    """Move ``member`` one step toward ``group.target`` (see the module docstring)."""
    if member.revoking:
        return
    target = group.target.get(member.member_id, frozenset())
    to_revoke = member.assigned - target
    if to_revoke:
        member.assigned -= to_revoke
        member.revoking |= to_revoke
        member.revocation_deadline_ms = now_ms + rebalance_timeout_ms
        return
    missing = target - member.assigned
    if missing:
        member.assigned |= missing - group.owned_by_others(member.member_id)
    if member.member_epoch != group.assignment_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = group.assignment_epoch
