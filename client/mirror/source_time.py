"""Failover by source time: the first target record whose source LogAppendTime is >= T.

Why this is exact and indexed: the mirror writes every target record with CreateTime = the
source batch's LogAppendTime (``sections.py``). Source LATs never decrease within a source
partition (DESIGN.md, rules of time), and a source partition is copied into its target
partition in order, so the target's CreateTimes never decrease either. The broker's
create-time index keeps "the largest CreateTime so far -> offset", and on a non-decreasing
sequence the largest so far is the CreateTime itself: its lookup (ListOffsets with
timestamp type "create") bisects the segments, then the index, then scans at most one index
interval, and answers exactly "the first record whose CreateTime >= T", which here is "the
first record whose source LAT >= T". The target's own LogAppendTime cannot serve: it runs
behind the source's by the mirror's delay and by any clock skew between the clusters.

Why the answer is then checked against the reserved headers: a target partition written
in part by a mirror older than this rule holds producers' CreateTimes, which may be any
time, and then the index alone could be wrong. The ``tslog.mirror.lat`` headers never
decrease along a mirrored partition, so offset o is the answer exactly when record o has a
source LAT >= T and record o - 1 (if any) has one < T: two single-record reads check it.
Only if the check fails does the lookup fall back to a binary search over those headers
(O(log n) single-record fetches), which is exact on any mirrored partition.
"""

from __future__ import annotations

from .. import Consumer, OffsetAndTimestamp, TopicPartition
from .lookup import source_at


def _source_lat(consumer: Consumer, tp: TopicPartition, offset: int) -> int:
    return source_at(consumer, tp, offset)[2]


def _is_first_at_or_after(consumer, tp, offset: int, start: int, end: int, timestamp: int):
    """The source LAT at ``offset`` if ``offset`` is the first record of [start, end) whose
    source LAT is >= ``timestamp`` (``end`` stands for "none is"), else None."""
    if offset < end:
        lat = _source_lat(consumer, tp, offset)
        if lat < timestamp:
            return None
    else:
        lat = -1
    if offset > start and _source_lat(consumer, tp, offset - 1) >= timestamp:
        return None
    return lat


def _search(consumer, tp, start: int, end: int, timestamp: int) -> int:
    """Binary search over the ``tslog.mirror.lat`` headers of [start, end)."""
    low, high = start, end
    while low < high:
        middle = (low + high) // 2
        if _source_lat(consumer, tp, middle) >= timestamp:
            high = middle
        else:
            low = middle + 1
    return low


def offsets_for_source_times(consumer: Consumer, timestamps: dict
                             ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """{target tp: T} -> {tp: (offset of the first record whose source LogAppendTime >= T,
    that LAT)}, or None where the target holds no such record yet - ``offsets_for_times``'s
    shape, by source time. ``consumer`` is a consumer of the target (``lookup.reader``);
    it is left with no assignment."""
    timestamps = {TopicPartition(*tp): int(t) for tp, t in timestamps.items()}
    indexed = consumer.offsets_for_times(timestamps, timestamp_type="create")
    tps = list(timestamps)
    starts = consumer.beginning_offsets(tps)
    ends = consumer.end_offsets(tps)
    answers = {}
    for tp, timestamp in timestamps.items():
        start, end = starts[tp], ends[tp]
        found = indexed.get(tp)
        offset = end if found is None else max(found.offset, start)
        lat = _is_first_at_or_after(consumer, tp, offset, start, end, timestamp)
        if lat is None:
            offset = _search(consumer, tp, start, end, timestamp)
            lat = _source_lat(consumer, tp, offset) if offset < end else -1
        answers[tp] = None if offset >= end else OffsetAndTimestamp(offset, lat)
    return answers
