"""Per-partition offset requests shared by the consumer and the admin: ListOffsets by time.

Why separate: both ``AsyncConsumer.offsets_for_times`` and ``AsyncAdmin.list_offsets`` must
group partitions by leader, send one ListOffsets per broker, and retry the partitions whose
leader moved; doing it once keeps the retry rules identical.
"""

from __future__ import annotations

import asyncio
import collections

from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._types import OffsetAndTimestamp, TopicPartition
from .errors import InvalidResponseError, TslogError, error_for, refused

_LIST_OFFSETS = ApiKey.LIST_OFFSETS  # read per request (see ApiKey)

TIMESTAMP_TYPES = ("append", "create")


def group_by_topic(items: dict[TopicPartition, dict]) -> list[dict]:
    """{tp: fields} -> [{"topic": t, "partitions": [{"partition": p, **fields}]}]."""
    topics: dict[str, list] = collections.defaultdict(list)
    for tp, fields in items.items():
        topics[tp.topic].append({"partition": tp.partition, **fields})
    return [{"topic": topic, "partitions": parts} for topic, parts in topics.items()]


def split_by_leader(cluster: Cluster, items: dict, fields) -> tuple[dict[int, dict], dict]:
    """({leader node: {tp: fields(value)}}, {tp: value} of the partitions without a leader):
    the one routing step of every request that goes to each partition's leader."""
    by_node: dict[int, dict] = collections.defaultdict(dict)
    leaderless = {}
    for tp, value in items.items():
        leader = cluster.leader_for(tp)
        if leader is None:
            leaderless[tp] = value
        else:
            by_node[leader][tp] = fields(value)
    return by_node, leaderless


async def delete_records(cluster: Cluster, offsets: dict[TopicPartition, int],
                         timeout_ms: int) -> dict[TopicPartition, int]:
    """DeleteRecords: each partition's leader moves its log start up to the offset (-1: its
    high watermark). Returns {tp: the log start offset afterwards}.

    Raises:
        A ``TslogError`` subclass naming the partition when a leader refuses (an offset past
        the high watermark is OffsetOutOfRangeError).
    """
    for topic in {tp.topic for tp in offsets}:
        await cluster.ensure_topic(topic)
    by_node: dict[int, dict] = collections.defaultdict(dict)
    for tp, offset in offsets.items():
        leader = cluster.leader_for(tp)
        if leader is None:
            raise error_for(5)(f"no leader for {tp.topic}-{tp.partition}")
        by_node[leader][tp] = {"offset": offset}
    replies = await asyncio.gather(*(cluster.request(node, ApiKey.DELETE_RECORDS, {
        "topics": group_by_topic(parts), "timeout_ms": timeout_ms})
        for node, parts in by_node.items()))
    results = {}
    for body in replies:
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                if part["error_code"]:
                    raise refused(part["error_code"], f"delete records of {tp.topic}-"
                                  f"{tp.partition} before offset {offsets.get(tp)}")
                results[tp] = part["low_watermark"]
    return results


async def list_offsets(
    cluster: Cluster, timestamps: dict[TopicPartition, int], timestamp_type: str = "append",
) -> dict[TopicPartition, OffsetAndTimestamp | None]:
    """Resolve each ``tp: timestamp`` (ms, or -1 latest / -2 earliest / -3 max timestamp).

    Returns:
        {tp: OffsetAndTimestamp(offset, timestamp)}, or None where no record qualifies.

    Raises:
        ValueError: an unknown timestamp_type. A ``TslogError`` subclass for a partition that
        still fails after ``cluster.retries`` attempts.
    """
    if timestamp_type not in TIMESTAMP_TYPES:
        raise ValueError(f"timestamp_type must be 'append' or 'create', not {timestamp_type!r}")
    results: dict[TopicPartition, OffsetAndTimestamp | None] = {}
    remaining = dict(timestamps)
    attempt = 0
    while remaining:
        known = cluster.topics
        for topic in {tp.topic for tp in remaining}:
            if not known.get(topic) or cluster.metadata_stale():
                await cluster.ensure_topic(topic)
        by_node, retry = split_by_leader(cluster, remaining, lambda ts: {"timestamp": ts})
        last_error: TslogError | None = None
        if retry:
            tp = next(reversed(retry))
            last_error = error_for(5)(f"no leader for {tp.topic}-{tp.partition}")
        requests = [cluster.request(node, _LIST_OFFSETS, {
            "replica_id": -1, "timestamp_type": timestamp_type,
            "topics": group_by_topic(parts)}, poll=True) for node, parts in by_node.items()]
        if len(requests) == 1:  # the usual case: no tasks for gather to create
            replies = [await requests[0]]
        else:
            replies = await asyncio.gather(*requests)
        for body in replies:
            for topic in body["topics"]:
                for part in topic["partitions"]:
                    tp = TopicPartition(topic["topic"], part["partition"])
                    if tp not in remaining:
                        continue
                    code = part["error_code"]
                    if code:
                        error = error_for(code)(f"{tp.topic}-{tp.partition}")
                        if not error.retriable:
                            raise error
                        retry[tp], last_error = remaining[tp], error
                    elif part["offset"] < 0:
                        results[tp] = None
                    else:
                        results[tp] = OffsetAndTimestamp(part["offset"], part["timestamp"])
        unanswered = [tp for tp in remaining if tp not in results and tp not in retry]
        if unanswered:
            raise InvalidResponseError(f"ListOffsets did not answer for {unanswered}")
        if retry:
            if attempt >= cluster.retries:
                raise last_error
            await asyncio.sleep(cluster.backoff_s(attempt))
            await cluster.refresh_metadata()
            attempt += 1
        remaining = retry
    return results
