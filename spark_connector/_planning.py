"""Driver-side planning: which partitions, from which offset to which, split into tasks.

Uses the public client API only (``tslog.client.Admin``: describe_topic, list_topics, brokers,
list_offsets). Times resolve through ListOffsets, i.e. through the broker's time index: the
answer for a partition is the first offset whose time is >= T. With LogAppendTime (the
default ``timestampType=append``) times never decrease within a partition, so a resolved
offset is exact: every record before it is older than T, every record from it on is not.
``timestampType=source`` on a mirror's target topic resolves the source cluster's
LogAppendTime instead, as exactly (``tslog.client.mirror.offsets_for_source_times``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from datetime import datetime, timezone

from tslog.client import Admin, TopicPartition
from tslog.client.errors import TslogError, UnknownTopicOrPartitionError
from tslog.client.mirror import offsets_for_source_times, reader

from ._fetch import FetchRange
from ._options import EARLIEST, LATEST, OffsetSpec, SourceOptions

log = logging.getLogger("tslog.spark_connector")

PLAN_LOG_ENV = "TSLOG_SPARK_PLAN_LOG"


class TslogPlanError(ValueError):
    """The requested range cannot be resolved (no match, missing partition, bad offsets)."""


def iso(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _time_name(timestamp_type: str) -> str:
    return {"append": "LogAppendTime", "create": "CreateTime",
            "source": "source LogAppendTime (tslog.mirror.lat)"}[timestamp_type]


def open_admin(opts: SourceOptions) -> Admin:
    try:
        return Admin(opts.bootstrap, request_timeout_ms=opts.request_timeout_ms,
                     security=opts.security)
    except (TslogError, OSError, ValueError) as exc:
        raise TslogPlanError(f"cannot reach tslog at bootstrap {opts.bootstrap!r}: {exc}") \
            from None


def discover(admin: Admin, opts: SourceOptions, *, missing_ok: bool = False):
    """([TopicPartition] sorted, {tp: (host, port) of its leader})."""
    if opts.subscribe_kind == "pattern":
        pattern = re.compile(opts.subscribe[0])
        topics = [t for t in admin.list_topics() if pattern.fullmatch(t)]
    else:
        topics = list(opts.subscribe)
    brokers = admin.brokers()
    tps = []
    leaders = {}
    for topic in sorted(topics):
        try:
            description = admin.describe_topic(topic)
        except UnknownTopicOrPartitionError:
            if missing_ok:
                continue
            raise TslogPlanError(
                f"topic {topic!r} does not exist on {opts.bootstrap}") from None
        for info in description.partitions:
            tp = TopicPartition(topic, info.partition)
            tps.append(tp)
            if info.leader in brokers:
                leaders[tp] = tuple(brokers[info.leader])
    return tps, leaders


def special_offsets(admin: Admin, tps, which: int) -> dict:
    """{tp: earliest (-2) or latest (-1) offset}."""
    if not tps:
        return {}
    answer = admin.list_offsets({tp: which for tp in tps})
    return {tp: (found.offset if found is not None else 0) for tp, found in answer.items()}


def offsets_for_times(admin: Admin, times: dict, timestamp_type: str,
                      opts: SourceOptions | None = None) -> dict:
    """{tp: T} -> {tp: first offset with time >= T, or None}. ``timestamp_type`` "source"
    (a mirror's target topic): the first record whose source LogAppendTime is >= T, through
    the mirror's lookup (docs/mirror.md), which needs ``opts`` to open a consumer."""
    if not times:
        return {}
    if timestamp_type == "source":
        with reader(opts.bootstrap, opts.security) as consumer:
            answer = offsets_for_source_times(consumer, times)
    else:
        answer = admin.list_offsets(times, timestamp_type)
    return {tp: (found.offset if found is not None else None) for tp, found in answer.items()}


def _check_named(spec: OffsetSpec, tps) -> None:
    """Per-partition JSON must name exactly the subscribed partitions (clear message)."""
    named = {TopicPartition(t, p) for t, parts in spec.value.items() for p in parts}
    assigned = set(tps)
    if named == assigned:
        return
    missing = sorted(assigned - named)
    extra = sorted(named - assigned)
    parts = []
    if missing:
        parts.append("it does not name " + ", ".join(f"{t} partition {p}" for t, p in missing))
    if extra:
        parts.append("it names " + ", ".join(f"{t} partition {p}" for t, p in extra)
                     + " which the subscription does not have")
    raise TslogPlanError(
        f"{spec.source} must list every subscribed partition and no other: "
        + "; ".join(parts) + " (use -2 for earliest, -1 for latest)")


def _no_match_message(admin: Admin, tp, timestamp: int, opts: SourceOptions,
                      source: str) -> str:
    name = _time_name(opts.timestamp_type)
    newest = None
    try:
        # a mirror writes CreateTime = source LAT: the newest CreateTime is the newest source LAT
        kind = "create" if opts.timestamp_type == "source" else opts.timestamp_type
        newest = admin.list_offsets({tp: -3}, kind).get(tp)
    except TslogError:
        pass
    if newest is None:
        state = "the partition is empty"
    else:
        state = (f"its newest record (offset {newest.offset}) has {name} "
                 f"{iso(newest.timestamp)} ({newest.timestamp} ms)")
    return (f"no offset matched {source}: topic {tp.topic!r} partition {tp.partition} has no "
            f"record with {name} at or after {iso(timestamp)} ({timestamp} ms); {state}. "
            "Set startingOffsetsByTimestampStrategy=latest to start such partitions at their "
            "latest offset instead")


def resolve(admin: Admin, spec: OffsetSpec, tps, opts: SourceOptions, side: str,
            latest: dict | None = None) -> dict:
    """Resolve one side to {tp: offset}. ``side`` is "start" or "end"."""
    if not tps:
        return {}
    if latest is None:
        latest = special_offsets(admin, tps, LATEST)
    if spec.kind == "earliest":
        return special_offsets(admin, tps, EARLIEST)
    if spec.kind == "latest":
        return {tp: latest[tp] for tp in tps}
    if spec.kind == "offsets":
        _check_named(spec, tps)
        wanted = {tp: spec.value[tp.topic][tp.partition] for tp in tps}
        earliest_needed = [tp for tp, off in wanted.items() if off == EARLIEST]
        earliest = special_offsets(admin, earliest_needed, EARLIEST)
        return {tp: (earliest[tp] if off == EARLIEST else latest[tp] if off == LATEST else off)
                for tp, off in wanted.items()}
    if spec.kind == "timestamp":
        times = {tp: spec.value for tp in tps}
    else:  # timestamps
        _check_named(spec, tps)
        times = {tp: spec.value[tp.topic][tp.partition] for tp in tps}
    found = offsets_for_times(admin, times, opts.timestamp_type, opts)
    result = {}
    for tp in tps:
        offset = found.get(tp)
        if offset is None:
            if side == "start" and opts.strategy == "error":
                raise TslogPlanError(_no_match_message(admin, tp, times[tp], opts, spec.source))
            offset = latest[tp]  # start with strategy latest, or any end: the latest offset
        result[tp] = offset
    return result


def check_range(tp, start: int, end: int, earliest: int, latest: int, opts: SourceOptions,
                starting: OffsetSpec, ending: OffsetSpec) -> tuple[int, int]:
    """Validate one resolved batch range against the log; return the range to read."""
    where = f"topic {tp.topic!r} partition {tp.partition}"
    if end > latest:
        raise TslogPlanError(f"{where}: {ending.describe()} asks to read up to offset {end}, "
                             f"but the partition ends at {latest}")
    if start > latest:
        raise TslogPlanError(f"{where}: {starting.describe()} asks to start at offset {start}, "
                             f"but the partition ends at {latest}")
    if start < earliest:
        message = (f"{where}: {starting.describe()} asks to start at offset {start}, but "
                   f"offsets before {earliest} were deleted by retention")
        if opts.fail_on_data_loss:
            raise TslogPlanError(message + "; set failOnDataLoss=false to read what is left")
        log.warning("%s; reading from %d (failOnDataLoss=false)", message, earliest)
        start = earliest
    if start > end:
        if starting.kind in ("offsets",) and ending.kind in ("offsets", "latest"):
            raise TslogPlanError(f"{where}: the starting offset {start} ({starting.describe()}) "
                                 f"is after the ending offset {end} ({ending.describe()})")
        start = end  # a time-resolved start after the end: nothing in the range
    return start, end


def split_ranges(ranges, min_partitions: int | None, max_records: int | None):
    """[(tp, start, end)] -> smaller ranges, as Spark's Kafka offset-range calculator."""
    ranges = [r for r in ranges if r[2] > r[1]]
    if max_records:
        pieces = []
        for tp, start, end in ranges:
            count = math.ceil((end - start) / max_records)
            pieces.extend(_even(tp, start, end, count))
        ranges = pieces
    if min_partitions and len(ranges) < min_partitions and ranges:
        total = sum(end - start for _, start, end in ranges)
        pieces = []
        for tp, start, end in ranges:
            share = max(1, math.ceil((end - start) * min_partitions / total))
            pieces.extend(_even(tp, start, end, min(share, end - start)))
        ranges = pieces
    return ranges


def _even(tp, start: int, end: int, count: int):
    size = end - start
    count = max(1, count)
    bounds = [start + size * i // count for i in range(count + 1)]
    return [(tp, bounds[i], bounds[i + 1]) for i in range(count) if bounds[i + 1] > bounds[i]]


def fetch_ranges(ranges, leaders: dict, opts: SourceOptions) -> list[FetchRange]:
    return [FetchRange(bootstrap=opts.bootstrap, topic=tp.topic, partition=tp.partition,
                       start=start, end=end, leader=leaders.get(tp),
                       fail_on_data_loss=opts.fail_on_data_loss,
                       include_headers=opts.include_headers,
                       fetch_max_bytes=opts.fetch_max_bytes,
                       timeout_ms=opts.request_timeout_ms, security=opts.security)
            for tp, start, end in ranges]


def offsets_json(offsets: dict) -> dict:
    """{tp: offset} -> {"topic": {"partition": offset}}, keys in a stable sorted order."""
    result: dict = {}
    for tp in sorted(offsets):
        result.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return result


def offsets_from_json(data: dict | None) -> dict:
    if not data:
        return {}
    return {TopicPartition(topic, int(p)): int(off)
            for topic, parts in data.items() for p, off in parts.items()}


def record_plan(kind: str, details: dict) -> None:
    """Append what a reader planned to the file named by $TSLOG_SPARK_PLAN_LOG (debug aid)."""
    path = os.environ.get(PLAN_LOG_ENV)
    if not path:
        return
    try:
        with open(path, "a") as handle:
            handle.write(json.dumps({"kind": kind, **details}, sort_keys=True) + "\n")
    except OSError:
        log.warning("cannot write the plan log %s", path)
