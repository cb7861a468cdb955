"""Move a consumer group from the source cluster to the mirror's target, exactly.

For each committed source offset C (the next record the group would read) the exact target
offset is the first target record whose ``tslog.mirror.offset`` header is >= C, found by
binary search (``lookup.exact_offset``): the group then reads every remaining record once.
Beside it, KIP-33's time method: the first target record whose CreateTime is >= (CreateTime of
the last record the group read) - max latency, and how many records it would read again.

Committed offsets come from the source when it answers, else from the mirror's latest
checkpoint on the target (``checkpoints.py``); ``source_used`` says which.

While the mirror lags the group - the target does not hold source offset C - 1 yet, the last
record the group read - there is no exact answer: the target's end would make the group
read C' .. C - 1 again once the mirror copies them. Then translation waits up to ``wait_s``
for the mirror (reporting progress), and if the target is still behind it raises
``TargetBehindGroup`` and commits nothing. Why not commit the log end anyway: "exact" is
the promise of this command, and a failover that re-reads is what it exists to avoid.
"""

from __future__ import annotations

import time
from typing import Callable, NamedTuple

from .. import Admin, TopicPartition
from ..errors import ConnectionLostError, RequestTimedOutError
from ..security import Security
from .checkpoints import read_checkpoint
from .logins import login_of
from .lookup import copied_through, exact_offset, reader, time_offset

_WAIT_STEP_S = 0.5


class Translation(NamedTuple):
    topic: str
    partition: int
    target_topic: str
    source_offset: int
    target_offset: int  # exact
    time_offset: int  # KIP-33's CreateTime - max latency
    fetches: int  # single-record fetches the binary search made

    @property
    def reread(self) -> int:
        return self.target_offset - self.time_offset


class TranslationResult(NamedTuple):
    group: str
    source_used: str  # "source" or "checkpoint written at <ms>"
    rows: list


class NothingToTranslate(ValueError):
    """The group has no committed offsets on mirrored topics (neither source nor checkpoint)."""


class TargetBehindGroup(ValueError):
    """The target has not copied every record the group read yet; nothing was committed."""


class Behind(NamedTuple):
    """A partition whose target holds source offsets only up to ``copied_through``, while
    the group read up to ``source_offset - 1``."""

    target_topic: str
    partition: int
    source_offset: int
    copied_through: int

    def describe(self) -> str:
        return (f"{self.target_topic}[{self.partition}] holds source offsets up to "
                f"{self.copied_through}, the group read up to {self.source_offset - 1} "
                f"({self.source_offset - 1 - self.copied_through} to go)")


def _source_offsets(source: str, group: str, rename: str, security: Security | None):
    with Admin(source, request_timeout_ms=5_000, retries=1, security=security) as admin:
        return [(tp.topic, tp.partition, rename.format(topic=tp.topic), meta.offset)
                for tp, meta in sorted(admin.list_consumer_group_offsets(group).items())]


def committed_offsets(group: str, source: str, target: str, rename: str,
                      source_security: Security | None, target_security: Security | None):
    """([(topic, partition, target topic, committed source offset)], where they came from):
    from the source when it answers, else from the mirror's latest checkpoint."""
    try:
        with login_of("source", source):
            committed = _source_offsets(source, group, rename, source_security)
        used = "source"
    except (ConnectionLostError, RequestTimedOutError, OSError) as error:
        with login_of("target", target):
            checkpoint = read_checkpoint(target, group, target_security)
        if checkpoint is None:
            raise NothingToTranslate(f"the source does not answer ({error}) and the target "
                                     f"holds no checkpoint of group {group!r}") from None
        committed = [(o["topic"], o["partition"], o["target_topic"], o["source_offset"])
                     for o in checkpoint["offsets"]]
        used = f"checkpoint written at {checkpoint['written_ms']}"
    return committed, used


def translate_group(group: str, source: str, target: str, *, rename: str = "{topic}",
                    max_latency_ms: int = 60_000, execute: bool = False,
                    source_security: Security | None = None,
                    target_security: Security | None = None, wait_s: float = 0.0,
                    progress: Callable[[list], None] | None = None) -> TranslationResult:
    """Translate ``group``'s committed offsets; with ``execute`` commit them on ``target``.
    Each cluster is reached with its own ``Security`` (None: plain TCP). While the target is
    behind the group, wait up to ``wait_s`` (``progress`` gets a line per partition behind
    about twice a second), then raise ``TargetBehindGroup``, committing nothing."""
    committed, used = committed_offsets(group, source, target, rename, source_security,
                                        target_security)
    with login_of("target", target):
        return _translate_on_target(group, used, committed, target, target_security,
                                    max_latency_ms, execute, wait_s, progress)


def _translate_on_target(group, used, committed, target, target_security, max_latency_ms,
                         execute, wait_s, progress) -> TranslationResult:
    with Admin(target, security=target_security) as admin:
        mirrored = set(admin.list_topics())
    committed = [row for row in committed if row[2] in mirrored]
    if not committed:
        raise NothingToTranslate(f"group {group!r} has no committed offsets on mirrored topics")
    rows = []
    with reader(target, target_security) as target_reader:
        _wait_for_target(target_reader, group, committed, wait_s, progress,
                         source_gone=used != "source")
        for topic, partition, target_topic, source_offset in committed:
            tp = TopicPartition(target_topic, partition)
            exact, fetches = exact_offset(target_reader, tp, source_offset)
            by_time = time_offset(target_reader, tp, exact, max_latency_ms)
            rows.append(Translation(topic, partition, target_topic, source_offset, exact,
                                    by_time, fetches))
    if execute:
        with Admin(target, security=target_security) as admin:
            admin.alter_consumer_group_offsets(group, {
                TopicPartition(row.target_topic, row.partition): row.target_offset
                for row in rows})
    return TranslationResult(group, used, rows)


def _behind(target_reader, committed) -> list[Behind]:
    """The partitions whose target does not hold the last record the group read."""
    late = []
    for _topic, partition, target_topic, source_offset in committed:
        if source_offset <= 0:
            continue
        through = copied_through(target_reader, TopicPartition(target_topic, partition))
        if through < source_offset - 1:
            late.append(Behind(target_topic, partition, source_offset, through))
    return late


def _wait_for_target(target_reader, group, committed, wait_s, progress, *,
                     source_gone: bool) -> None:
    """Return once the target holds every record the group read; raise
    ``TargetBehindGroup`` if it does not within ``wait_s`` (at once if ``source_gone``:
    then the mirror cannot copy more, and the message says so)."""
    if source_gone:
        wait_s = 0.0
    deadline = time.monotonic() + wait_s
    late = _behind(target_reader, committed)
    while late and time.monotonic() < deadline:
        if progress is not None:
            progress([entry.describe() for entry in late])
        time.sleep(min(_WAIT_STEP_S, max(0.0, deadline - time.monotonic())))
        late = _behind(target_reader, committed)
    if not late:
        return
    if source_gone:
        hint = ("the source does not answer, so the mirror cannot copy them: they were lost "
                "with it; move the group by hand or by time (--to-datetime), knowingly")
    else:
        hint = ("an exact offset does not exist yet: let the mirror catch up, or give --wait "
                f"to wait for it{f' longer than {wait_s:g} s' if wait_s else ''}")
    raise TargetBehindGroup(f"the target has not copied every record group {group!r} read: "
                            + "; ".join(entry.describe() for entry in late)
                            + f"; committed nothing ({hint})")
