"""Consumer groups for the console: state, members, committed offsets, lag, and a reset plan.

Lag in seconds is what ``tslog groups describe`` prints: the age of the oldest record the
group has not consumed, now minus the LogAppendTime of the record at its committed offset
(0 when caught up, unknown when nothing is committed). Its time comes from its batch's
header (``AsyncAdmin.log_append_times``: one Fetch for every lagging partition, no record
decoded).

A reset to a moment follows ``tslog groups reset-offsets --to-datetime``'s rules, which both
take from ``tslog.client.group_resets``: each partition goes to the first offset at or after
the moment (the log end where no record is that late), clamped to [log start, log end];
``earliest`` and ``latest`` are accepted too; a group with live members is refused (their
consumers would overwrite the change). The plan is computed once for the confirmation page,
and exactly that plan is applied.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tslog.client.aio import AsyncAdmin, TopicPartition
from tslog.client.errors import GroupIdNotFoundError
from tslog.client.group_resets import at_keyword, at_moment, clamped, keyword, live_group_refusal
from tslog.client.times import parse_time_ms

from .reads import bounds


@dataclass(frozen=True)
class LagRow:
    tp: TopicPartition
    committed: int | None
    log_end: int
    member: str | None
    oldest_unread_ms: int | None  # LogAppendTime of the record at the committed offset

    @property
    def lag(self) -> int | None:
        return None if self.committed is None else max(0, self.log_end - self.committed)

    def lag_seconds(self, now_ms: int) -> float | None:
        if self.committed is None:
            return None
        if self.oldest_unread_ms is None:
            return 0.0 if self.lag == 0 else None
        return round(max(0, now_ms - self.oldest_unread_ms) / 1000, 3)


async def describe(admin: AsyncAdmin, group_id: str):
    """(GroupDescription or None, {tp: committed offset}); None, {} for no such group."""
    try:
        group = (await admin.describe_consumer_groups([group_id]))[group_id]
    except GroupIdNotFoundError:
        group = None
    committed = await admin.list_consumer_group_offsets(group_id)
    return group, {tp: meta.offset for tp, meta in committed.items()}


async def lag_rows(admin: AsyncAdmin, group, committed: dict) -> list:
    """One LagRow per partition the group committed or owns, sorted."""
    owners = {tp: member.member_id for member in (group.members if group else ())
              for tp in member.assigned}
    partitions = sorted(set(committed) | set(owners))
    limits = await bounds(admin, partitions)
    behind = {tp: max(committed[tp], limits[tp][0]) for tp in partitions
              if tp in committed and committed[tp] < limits[tp][1]}
    times = await admin.log_append_times(behind) if behind else {}
    return [LagRow(tp, committed.get(tp), limits[tp][1], owners.get(tp), times.get(tp))
            for tp in partitions]


@dataclass(frozen=True)
class ResetPlan:
    group_id: str
    topic: str
    moment: str  # as the user typed it
    moment_ms: int | None  # what it meant when the plan was made; None for earliest/latest
    rows: list  # of (partition, current offset or None, new offset)

    @property
    def offsets(self) -> dict:
        return {TopicPartition(self.topic, p): new for p, _, new in self.rows}


async def refuse_live_group(admin: AsyncAdmin, group_id: str) -> None:
    group, _ = await describe(admin, group_id)
    refusal = live_group_refusal(group_id, group)
    if refusal is not None:
        raise refusal


async def plan_reset(admin: AsyncAdmin, group_id: str, topic: str, moment: str,
                     timestamp_type: str = "append") -> ResetPlan:
    """What a reset of ``group_id`` on ``topic`` to ``moment`` would set, per partition."""
    await refuse_live_group(admin, group_id)
    description = await admin.describe_topic(topic)
    tps = [TopicPartition(topic, info.partition) for info in description.partitions]
    limits = await bounds(admin, tps)
    _, committed = await describe(admin, group_id)
    word = keyword(moment)
    moment_ms = None
    if word is not None:
        targets = at_keyword(word, tps, limits)
    else:
        moment_ms = parse_time_ms(moment)
        targets = at_moment(await admin.list_offsets({tp: moment_ms for tp in tps},
                                                     timestamp_type), limits)
    plan = clamped(targets, limits)
    rows = [(tp.partition, committed.get(tp), plan[tp]) for tp in tps]
    return ResetPlan(group_id, topic, moment, moment_ms, rows)


async def apply_reset(admin: AsyncAdmin, group_id: str, offsets: dict) -> None:
    """Commit exactly ``offsets`` ({tp: offset}); the broker refuses a group gone live."""
    await admin.alter_consumer_group_offsets(group_id, offsets)


def now_ms() -> int:
    return time.time_ns() // 1_000_000
