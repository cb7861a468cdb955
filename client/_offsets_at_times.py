"""Many times per partition in one request (OffsetsAtTimes, tslog's api key 1000).

Why its own module: ``list_offsets`` asks one time per partition; a chart of records per
time bucket asks every bucket edge of every partition, and one request per edge would cost
B round trips of P lookups. Here each leader gets one request carrying every partition's
sorted, de-duplicated times; the answers come back in the caller's order. Partitions whose
leader moved are asked again, as ``list_offsets`` does (the same retry rules).
"""

from __future__ import annotations

import asyncio

from tslog.protocol.int_columns import ColumnError, unpack_int64
from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._offsets import TIMESTAMP_TYPES, group_by_topic, split_by_leader
from ._types import OffsetAndTimestamp, TopicPartition
from .errors import InvalidResponseError, TslogError, error_for

_OFFSETS_AT_TIMES = ApiKey.OFFSETS_AT_TIMES  # read per request (see ApiKey)
MAX_TIMES = 2048  # distinct times per partition the broker answers in one request


def _distinct_times(times) -> list[int]:
    try:
        distinct = sorted(set(times))
    except TypeError:
        raise ValueError("times must be epoch milliseconds (ints >= 0)") from None
    if distinct and (distinct[0] < 0 or not set(map(type, distinct)) <= {int}):
        raise ValueError("times must be epoch milliseconds (ints >= 0)")
    if len(distinct) > MAX_TIMES:
        raise ValueError(f"{len(distinct)} distinct times in one partition is more than "
                         f"{MAX_TIMES}")
    return distinct


async def offsets_at_times(cluster: Cluster, times: dict[TopicPartition, list],
                           timestamp_type: str = "append"
                           ) -> dict[TopicPartition, list[OffsetAndTimestamp | None]]:
    """{tp: [t, ...]} -> {tp: [the first offset whose time is >= t, and its time, or None]}.

    Raises:
        ValueError: a bad timestamp_type, a negative time, more than MAX_TIMES distinct
        times in a partition. A ``TslogError`` subclass for a partition that still fails
        after ``cluster.retries`` attempts.
    """
    if timestamp_type not in TIMESTAMP_TYPES:
        raise ValueError(f"timestamp_type must be 'append' or 'create', not {timestamp_type!r}")
    asked = {tp: _distinct_times(ts) for tp, ts in times.items()}
    answered = await _ask(cluster, {tp: ts for tp, ts in asked.items() if ts}, timestamp_type,
                          _pairs)
    return {tp: _in_asked_order(ts, asked[tp], answered.get(tp)) for tp, ts in times.items()}


async def offset_columns(cluster: Cluster, partitions: list, times: list,
                         timestamp_type: str = "append") -> dict[TopicPartition, list[int]]:
    """The same times in every partition -> {tp: [the first offset whose time is >= t, or
    -1], in the order of ``times``}: each leader's packed answer, unpacked in one call.

    Why beside ``offsets_at_times``: a chart asks every partition the same bucket edges and
    needs only offsets; version 1 sends the times once and answers offsets packed, so
    neither side does Python work per (partition, time), where ``offsets_at_times`` makes
    an answer per time. Raises as ``offsets_at_times`` does."""
    if timestamp_type not in TIMESTAMP_TYPES:
        raise ValueError(f"timestamp_type must be 'append' or 'create', not {timestamp_type!r}")
    distinct = _distinct_times(times)
    tps = [TopicPartition(*tp) for tp in partitions]
    answered = await _ask(cluster, dict.fromkeys(tps, distinct) if distinct else {},
                          timestamp_type, _packed_offsets, shared=distinct)
    if list(times) == distinct:
        return {tp: answered.get(tp, []) for tp in tps}
    where = [distinct.index(t) for t in times]  # few times: a chart's edges are sorted already
    return {tp: [answered[tp][i] for i in where] for tp in tps}


async def _ask(cluster: Cluster, remaining: dict, timestamp_type: str, take,
               shared: list | None = None) -> dict:
    """{tp: take(tp, times, answer)} for every partition, asking again those whose leader
    moved (``cluster.retries`` times, as ``list_offsets`` does). ``shared``: the times every
    partition is asked, sent once (version 1, offsets packed in the answer)."""
    answered: dict[TopicPartition, list] = {}
    attempt = 0
    while remaining:
        retry, last_error = await _ask_leaders(cluster, remaining, timestamp_type, answered,
                                               take, shared)
        if retry:
            if attempt >= cluster.retries:
                raise last_error
            await asyncio.sleep(cluster.backoff_s(attempt))
            await cluster.refresh_metadata()
            attempt += 1
        remaining = retry
    return answered


def _in_asked_order(times: list, distinct: list, answers: list | None) -> list:
    """The answers (one per distinct time) in the caller's order, repeats included."""
    if answers is None:
        return [None] * len(times)
    if times == distinct:  # sorted and without repeats already: the usual case (a chart)
        return answers
    by_time = dict(zip(distinct, answers))
    return [by_time[t] for t in times]


async def _ask_leaders(cluster: Cluster, remaining: dict, timestamp_type: str,
                       answered: dict, take, shared: list | None
                       ) -> tuple[dict, TslogError | None]:
    """One request per leader; fills ``answered`` ({tp: take(tp, times, answer)}); returns the
    partitions to ask again and the last retriable error."""
    for topic in {tp.topic for tp in remaining}:
        if not cluster.topics.get(topic) or cluster.metadata_stale():
            await cluster.ensure_topic(topic)
    by_node, retry = split_by_leader(cluster, remaining, (lambda ts: {"timestamps": ts})
                                     if shared is None else _as_is)
    last_error: TslogError | None = None
    if retry:
        tp = next(reversed(retry))
        last_error = error_for(5)(f"no leader for {tp.topic}-{tp.partition}")
    if shared is None:
        requests = [cluster.request(node, _OFFSETS_AT_TIMES, {
            "timestamp_type": timestamp_type, "topics": group_by_topic(parts)})
            for node, parts in by_node.items()]
    else:
        requests = [cluster.request(node, _OFFSETS_AT_TIMES, {
            "timestamp_type": timestamp_type, "timestamps": shared,
            "topics": _partition_lists(parts)}, api_version=1)
            for node, parts in by_node.items()]
    replies = await asyncio.gather(*requests)
    for body in replies:
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                if tp not in remaining:
                    continue
                if part["error_code"]:
                    error = error_for(part["error_code"])(f"{tp.topic}-{tp.partition}")
                    if not error.retriable:
                        raise error
                    retry[tp], last_error = remaining[tp], error
                    continue
                answered[tp] = take(tp, remaining[tp], part)
    unanswered = [tp for tp in remaining if tp not in answered and tp not in retry]
    if unanswered:
        raise InvalidResponseError(f"OffsetsAtTimes did not answer for {unanswered}")
    return retry, last_error


def _as_is(value):
    return value


def _partition_lists(parts: dict) -> list[dict]:
    """{tp: ...} -> [{"topic": t, "partitions": [p, ...]}] (version 1's shape)."""
    topics: dict[str, list] = {}
    for tp in parts:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": topic, "partitions": partitions} for topic, partitions in topics.items()]


def _packed_offsets(tp: TopicPartition, asked: list, part: dict) -> list:
    """Version 1's answer: the offsets, packed as int64 (-1: no record that late)."""
    try:
        offsets = unpack_int64(part["offsets"])
    except ColumnError as exc:
        raise InvalidResponseError(f"OffsetsAtTimes of {tp.topic}-{tp.partition}: {exc}") from None
    if len(offsets) != len(asked):
        raise InvalidResponseError(f"OffsetsAtTimes answered {len(offsets)} offsets for "
                                   f"{len(asked)} times of {tp.topic}-{tp.partition}")
    return offsets


def _check_length(tp: TopicPartition, asked: list, part: dict) -> None:
    offsets, stamps = part["offsets"], part["timestamps"]
    if len(offsets) != len(asked) or len(stamps) != len(asked):
        raise InvalidResponseError(f"OffsetsAtTimes answered {len(offsets)} offsets for "
                                   f"{len(asked)} times of {tp.topic}-{tp.partition}")


def _pairs(tp: TopicPartition, asked: list, part: dict) -> list:
    """One answer per asked time. Neighbouring times mostly share an answer (a chart's
    empty buckets), and they share one object too: one is made per change, not per time."""
    _check_length(tp, asked, part)
    offsets, stamps = part["offsets"], part["timestamps"]
    answers: list = []
    last_offset = last_stamp = current = None
    for offset, stamp in zip(offsets, stamps):
        if offset != last_offset or stamp != last_stamp:
            last_offset, last_stamp = offset, stamp
            current = None if offset < 0 else OffsetAndTimestamp(offset, stamp)
        answers.append(current)
    return answers
