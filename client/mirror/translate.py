"""Move a consumer group from the source cluster to the mirror's target, exactly.

For each committed source offset C (the next record the group would read) the exact target
offset is the first target record whose ``tslog.mirror.offset`` header is >= C, found by
binary search (``lookup.exact_offset``): the group then reads every remaining record once.
Beside it, KIP-33's time method: the first target record whose CreateTime is >= (CreateTime of
the last record the group read) - max latency, and how many records it would read again.

Committed offsets come from the source when it answers, else from the mirror's latest
checkpoint on the target (``checkpoints.py``); ``source_used`` says which.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import Admin, TopicPartition
from ..errors import ConnectionLostError, RequestTimedOutError
from ..security import Security
from .checkpoints import read_checkpoint
from .logins import login_of
from .lookup import exact_offset, reader, time_offset


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


def _source_offsets(source: str, group: str, rename: str, security: Security | None):
    with Admin(source, request_timeout_ms=5_000, retries=1, security=security) as admin:
        return [(tp.topic, tp.partition, rename.format(topic=tp.topic), meta.offset)
                for tp, meta in sorted(admin.list_consumer_group_offsets(group).items())]


def translate_group(group: str, source: str, target: str, *, rename: str = "{topic}",
                    max_latency_ms: int = 60_000, execute: bool = False,
                    source_security: Security | None = None,
                    target_security: Security | None = None) -> TranslationResult:
    """Translate ``group``'s committed offsets; with ``execute`` commit them on ``target``.
    Each cluster is reached with its own ``Security`` (None: plain TCP)."""
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
    with login_of("target", target):
        return _translate_on_target(group, used, committed, target, target_security,
                                    max_latency_ms, execute)


def _translate_on_target(group, used, committed, target, target_security, max_latency_ms,
                         execute) -> TranslationResult:
    with Admin(target, security=target_security) as admin:
        mirrored = set(admin.list_topics())
    committed = [row for row in committed if row[2] in mirrored]
    if not committed:
        raise NothingToTranslate(f"group {group!r} has no committed offsets on mirrored topics")
    rows = []
    with reader(target, target_security) as target_reader:
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
