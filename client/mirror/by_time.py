"""``tslog groups translate GROUP --to-datetime T``: move a group to the target by source time.

For every partition of the chosen topics, the group's target offset is the first target
record whose source LogAppendTime is >= T (``source_time.py``: exact, through the target's
create-time index). Why source time and not the target's own: the target's LogAppendTime
runs behind the source's by the mirror's delay, so "from 10:00" on the target's clock would
re-read or skip what the source appended around 10:00.

When the target holds no record at or after T in a partition, the answer is its log end,
which is exact only if the mirror has nothing left to copy there that is older than T. So
that case asks the source: if it answers and its partition holds more than the target, the
mirror is behind, and (as translation by offsets does) this waits up to ``wait_s`` and then
refuses, committing nothing. If the source does not answer, it cannot give the mirror more,
and the target's end is the answer.
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

from .. import Admin, TopicPartition
from ..errors import ConnectionLostError, RequestTimedOutError
from ..security import Security
from .logins import login_of
from .lookup import copied_through, reader
from .source_time import offsets_for_source_times
from .translate import NothingToTranslate, TargetBehindGroup, committed_offsets

_WAIT_STEP_S = 0.5


class TimeRow(NamedTuple):
    target_topic: str
    partition: int
    target_offset: int
    source_lat: int  # the source LAT of the record at target_offset; -1 at the log end


class TimeResult(NamedTuple):
    group: str
    timestamp: int
    rows: list


def _target_topics(group, source, target, rename, topics, source_security,
                   target_security) -> dict[str, str]:
    """{target topic: source topic} to move: ``topics`` (source names), else every mirrored
    topic the group has committed offsets on (from the source or the checkpoint)."""
    if topics:
        return {rename.format(topic=topic): topic for topic in topics}
    committed, _ = committed_offsets(group, source, target, rename, source_security,
                                     target_security)
    return {row[2]: row[0] for row in committed}


def _source_ends(source: str, security, tps: dict) -> dict | None:
    """{target tp: the source partition's end offset}, or None if the source does not answer."""
    try:
        with login_of("source", source), Admin(source, request_timeout_ms=5_000, retries=1,
                                                   security=security) as admin:
            found = admin.list_offsets({source_tp: -1 for source_tp in tps.values()})
    except (ConnectionLostError, RequestTimedOutError, OSError):
        return None
    return {tp: found[source_tp].offset for tp, source_tp in tps.items()}


def _behind(target_reader, source, source_security, pending: dict) -> list[str]:
    """Partitions without a record at or after T whose mirror has more to copy."""
    ends = _source_ends(source, source_security, pending)
    if ends is None:
        return []
    late = []
    for tp in pending:
        through = copied_through(target_reader, tp)
        if through < ends[tp] - 1:
            late.append(f"{tp.topic}[{tp.partition}] holds source offsets up to {through} of "
                        f"{ends[tp] - 1} and none at or after the time yet")
    return late


def translate_by_time(group: str, source: str, target: str, timestamp: int, *,
                      rename: str = "{topic}", topics=(), execute: bool = False, source_security: Security | None = None,
                      target_security: Security | None = None, wait_s: float = 0.0,
                      progress: Callable[[list], None] | None = None) -> TimeResult:
    """Target offsets of the first records whose source LAT >= ``timestamp``, for every
    partition of ``topics`` (source names; default: the group's committed topics); with
    ``execute`` committed for ``group`` on ``target``. Raises ``TargetBehindGroup`` (and
    commits nothing) while the mirror is behind where the answer is not on the target yet."""
    source_of = _target_topics(group, source, target, rename, topics, source_security,
                               target_security)
    names = sorted(source_of)
    with login_of("target", target), Admin(target, security=target_security) as admin:
        present = set(admin.list_topics())
        if not names or not set(names) <= present:
            raise NothingToTranslate(f"no mirrored topic to move group {group!r} on: "
                                     f"{', '.join(sorted(set(names) - present)) or 'none'}")
        tps = [TopicPartition(name, info.partition) for name in names
               for info in admin.describe_topic(name).partitions]
        with reader(target, target_security) as target_reader:
            rows = _resolve(target_reader, tps, timestamp, source, source_security,
                            source_of, group, wait_s, progress)
        if execute:
            admin.alter_consumer_group_offsets(group, {
                TopicPartition(row.target_topic, row.partition): row.target_offset
                for row in rows})
    return TimeResult(group, timestamp, rows)


def _resolve(target_reader, tps, timestamp, source, source_security, source_of, group,
             wait_s, progress) -> list[TimeRow]:
    deadline = time.monotonic() + wait_s
    while True:
        found = offsets_for_source_times(target_reader, {tp: timestamp for tp in tps})
        pending = {tp: TopicPartition(source_of[tp.topic], tp.partition)
                   for tp in tps if found[tp] is None}
        late = _behind(target_reader, source, source_security, pending) if pending else []
        if not late:
            break
        if time.monotonic() >= deadline:
            raise TargetBehindGroup(
                f"the target does not hold group {group!r}'s start by time yet: "
                + "; ".join(late) + "; committed nothing (let the mirror catch up, or give "
                "--wait to wait for it)")
        if progress is not None:
            progress(late)
        time.sleep(_WAIT_STEP_S)
    ends = target_reader.end_offsets(tps)
    return [TimeRow(tp.topic, tp.partition, *(found[tp] or (ends[tp], -1))) for tp in tps]
