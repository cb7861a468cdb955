"""Partition reassignment as changes of one partition state: start, cancel, complete.

Theory of operation (docs/cluster.md, "Grow, shrink and rebalance"): a reassignment is
written into the partition's own etcd key, so it is exactly as durable as the state it
changes, and a controller that takes over finds it there and carries on.

- **Start** (any broker, a compare-and-swap on the key's version): ``replicas`` becomes the
  original replicas followed by the target's new ones (``adding``), ``target`` records the
  set asked for. Leader, epoch and ISR stay: every broker now listed opens a log for the
  partition and follows the leader, which adds each new replica to the ISR once it has
  caught up, as it does for a returning follower.
- **Complete** (the controller's sweep): once every target replica is in the ISR, one write
  makes ``replicas`` and the ISR the target. If the leader is not in the target, the first
  live target replica leads instead, epoch + 1 (it is in the ISR, so it holds every
  committed record). The replicas left out stop following and delete their logs.
- **Cancel**: the target becomes the original replicas; completion then drops the added
  ones (and gives leadership back to an original replica if an added one led by then).

Preferred leaders: ``preferred`` gives leadership back to a partition's first replica once
it is live and in the ISR (the controller's sweep, with ``auto_leader_rebalance_enable``,
and ElectLeaders on request).

No I/O here: these are pure functions of a state, unit-tested on their own.
"""

from __future__ import annotations

from dataclasses import replace

from tslog.protocol.errors import ErrorCode

from .view import NO_LEADER, PartitionState


class ReassignmentError(Exception):
    """A reassignment request that cannot be applied; ``error_code`` is the wire's answer."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def original_replicas(state: PartitionState) -> tuple[int, ...]:
    """The replicas before the reassignment under way (all of them if none is)."""
    return tuple(r for r in state.replicas if r not in state.adding)


def adding_replicas(state: PartitionState) -> tuple[int, ...]:
    """Replicas the reassignment adds and keeps (none while a cancellation runs)."""
    return tuple(r for r in state.adding if r in state.target)


def removing_replicas(state: PartitionState) -> tuple[int, ...]:
    """Replicas that leave once the reassignment completes."""
    if not state.target:
        return ()
    return tuple(r for r in state.replicas if r not in state.target)


def started(state: PartitionState, target: tuple[int, ...],
            registered: set[int]) -> PartitionState | None:
    """``state`` with a reassignment to ``target`` under way, or None if its replicas are
    ``target`` already. Raises ReassignmentError for a target that cannot be (empty,
    repeated or unregistered brokers) or while another reassignment runs."""
    if not target:
        raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                "a replica set needs at least one broker")
    if len(set(target)) != len(target):
        raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"broker repeated in {list(target)}")
    unknown = sorted(set(target) - registered)
    if unknown:
        raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                f"brokers {unknown} are not registered (not running)")
    if state.target:
        raise ReassignmentError(ErrorCode.REASSIGNMENT_IN_PROGRESS,
                                f"a reassignment to {list(state.target)} is under way; "
                                f"cancel it first")
    if tuple(target) == state.replicas:
        return None
    adding = tuple(r for r in target if r not in state.replicas)
    return replace(state, replicas=state.replicas + adding, target=tuple(target),
                   adding=adding)


def cancelled(state: PartitionState) -> PartitionState:
    """``state`` on its way back to its original replicas. Raises ReassignmentError
    (NO_REASSIGNMENT_IN_PROGRESS) when nothing runs."""
    if not state.target:
        raise ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                f"no reassignment of {state.topic}-{state.partition} runs")
    return replace(state, target=original_replicas(state))


def completed(state: PartitionState, live: set[int]) -> PartitionState | None:
    """The state that ends ``state``'s reassignment, or None while it must wait: for every
    target replica to be in the ISR, and, if the leader leaves, for a live one to lead."""
    target = state.target
    if not target or not set(target) <= set(state.isr):
        return None
    leader, epoch = state.leader, state.leader_epoch
    if leader not in target:
        candidates = [r for r in target if r in live]
        if not candidates:
            return None
        leader, epoch = candidates[0], epoch + 1
    return replace(state, leader=leader, leader_epoch=epoch, isr=target, replicas=target,
                   target=(), adding=())


def preferred(state: PartitionState, live: set[int]) -> PartitionState | None:
    """``state`` led by its preferred replica (the first), epoch + 1, or None when it leads
    already, is not live or not in the ISR, or while a reassignment runs (its completion
    decides the leader)."""
    first = state.replicas[0]
    if (state.target or state.leader in (first, NO_LEADER) or first not in state.isr
            or first not in live):
        return None
    return replace(state, leader=first, leader_epoch=state.leader_epoch + 1)
