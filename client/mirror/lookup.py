"""Reading the target log back: one record at an offset, the resume point, and the exact
target offset of a source offset (binary search over the reserved offset header).

Why a binary search works: the mirror writes a source partition into its target partition in
source order and never twice (see ``copier.py``), so the source offsets in the target's
``tslog.mirror.offset`` headers strictly increase with the target offset. Finding the first
target record whose source offset is >= N then takes O(log n) single-record fetches.
"""

from __future__ import annotations

import time

from .. import Consumer, TopicPartition
from ..security import Security
from . import headers as reserved

_READ_TIMEOUT_S = 10.0


class MirrorLogError(ValueError):
    """A target partition holds records the mirror did not write (no reserved headers)."""


def reader(bootstrap: str, security: Security | None = None) -> Consumer:
    """A consumer for ``read_record``: its fetches wait at most 20 ms at a log end, since a
    seek waits for the fetch in flight, and a binary search seeks once per step."""
    return Consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=20,
                    security=security)


def read_record(consumer: Consumer, tp: TopicPartition, offset: int):
    """The record at ``offset`` of ``tp`` (one fetch); raises TimeoutError if it never comes.
    The consumer is left with no assignment, so it does not keep fetching between reads."""
    consumer.assign([tp])
    consumer.seek(tp, offset)
    deadline = time.monotonic() + _READ_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=500, max_records=1):
                if record.offset == offset:
                    return record
                consumer.seek(tp, offset)
    finally:
        consumer.assign([])
    raise TimeoutError(f"no record at offset {offset} of {tp.topic}[{tp.partition}]")


def source_at(consumer: Consumer, tp: TopicPartition, offset: int) -> tuple[int, int, int]:
    """The reserved headers' (source partition, source offset, source LogAppendTime) of the
    target record at ``offset``; MirrorLogError if the mirror did not write it."""
    record = read_record(consumer, tp, offset)
    origin = reserved.source_of(record.headers)
    if origin is None:
        raise MirrorLogError(f"{tp.topic}[{tp.partition}] offset {offset} was not written by "
                             f"the mirror (no {reserved.OFFSET}/{reserved.LAT} headers)")
    return origin


def source_offset_at(consumer: Consumer, tp: TopicPartition, offset: int) -> int:
    return source_at(consumer, tp, offset)[1]


def resume_offset(consumer: Consumer, tp: TopicPartition) -> int | None:
    """The source offset to copy next into ``tp``: its last record's source offset + 1, or
    None when ``tp`` is empty (then the mirror starts at the source's earliest)."""
    start = consumer.beginning_offsets([tp])[tp]
    end = consumer.end_offsets([tp])[tp]
    if end <= start:
        return None
    return source_offset_at(consumer, tp, end - 1) + 1


def copied_through(consumer: Consumer, tp: TopicPartition) -> int:
    """The last source offset the target partition ``tp`` holds (-1 when it is empty)."""
    resume = resume_offset(consumer, tp)
    return -1 if resume is None else resume - 1


def exact_offset(consumer: Consumer, tp: TopicPartition, source_offset: int) -> tuple[int, int]:
    """(target offset of the first record whose source offset >= ``source_offset``, fetches
    made); the target's log end when the mirror has not copied that far yet."""
    low = consumer.beginning_offsets([tp])[tp]
    high = consumer.end_offsets([tp])[tp]
    fetches = 0
    while low < high:
        middle = (low + high) // 2
        fetches += 1
        if source_offset_at(consumer, tp, middle) >= source_offset:
            high = middle
        else:
            low = middle + 1
    return low, fetches


def time_offset(consumer: Consumer, tp: TopicPartition, exact: int,
                max_latency_ms: int) -> int:
    """KIP-33's failover answer: the first target record with CreateTime >= (CreateTime of the
    last record the group read) - ``max_latency_ms``. The target's CreateTime is the source
    LogAppendTime (``sections.py``), so producers' old CreateTimes cannot drag it back to the
    start of the log; it re-reads ``exact - time_offset`` records, those the source appended
    within ``max_latency_ms`` before the group's position."""
    start = consumer.beginning_offsets([tp])[tp]
    if exact <= start:
        return exact
    last_read = read_record(consumer, tp, exact - 1)
    found = consumer.offsets_for_times({tp: last_read.create_time - max_latency_ms},
                                       timestamp_type="create")[tp]
    return exact if found is None else min(found.offset, exact)
