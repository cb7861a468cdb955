"""The LogAppendTime of the record at an offset, from its batch's header alone.

Why: a group's lag in seconds is now minus the LogAppendTime of the oldest record it has not
consumed, and every record of a batch carries its batch's LogAppendTime, which sits in the
fixed batch header. So one Fetch per leader for every partition, with a per-partition
``max_bytes`` of 1 (the broker sends whole batches, at least the one holding the offset, and
no more), and one header parse per partition answer it: no record is decoded.

The response's byte budget (the broker's ``fetch_max_bytes``) can run out before the last
partitions of a request; those come back empty and are asked again, up to ROUNDS_MAX rounds
(each answers at least one); a partition still unanswered then is None, as for an error.
"""

from __future__ import annotations

import asyncio

from tslog.protocol.batch_header import HEADER_SIZE, parse_header
from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._offsets import group_by_topic, split_by_leader
from ._types import TopicPartition

_FETCH = ApiKey.FETCH  # read per request (see ApiKey)
PARTITION_BYTES = 1  # per partition: the batch holding the offset, nothing after it
RESPONSE_BYTES = 64 << 20  # the broker's fetch_max_bytes lowers it
ROUNDS_MAX = 8


async def log_append_times(cluster: Cluster, offsets: dict[TopicPartition, int]
                           ) -> dict[TopicPartition, int | None]:
    """{tp: offset} -> {tp: LogAppendTime of the record at that offset}; None where the
    partition could not say (no such record below the high watermark, an error)."""
    for topic in {tp.topic for tp in offsets}:
        await cluster.ensure_topic(topic)
    found: dict[TopicPartition, int | None] = {}
    remaining = dict(offsets)
    for _ in range(ROUNDS_MAX):
        if not remaining:
            break
        remaining = await _round(cluster, remaining, found)
    return {tp: found.get(tp) for tp in offsets}


async def _round(cluster: Cluster, offsets: dict, found: dict) -> dict:
    """One Fetch per leader; fills ``found``; returns the partitions that got no batch."""
    by_node, leaderless = split_by_leader(
        cluster, offsets, lambda offset: {"fetch_offset": offset, "max_bytes": PARTITION_BYTES})
    found.update(dict.fromkeys(leaderless))
    replies = await asyncio.gather(*(cluster.request(node, _FETCH, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": RESPONSE_BYTES,
        "topics": group_by_topic(parts)}) for node, parts in by_node.items()))
    again = {}
    for body in replies:
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                if tp not in offsets:
                    continue
                records = part["records"]
                if part["error_code"] or part["high_watermark"] <= offsets[tp]:
                    found[tp] = None
                elif len(records) < HEADER_SIZE:
                    again[tp] = offsets[tp]
                else:
                    found[tp] = _time_at(records, offsets[tp])
    return again


def _time_at(records: bytes, offset: int) -> int | None:
    """The LogAppendTime of the batch holding ``offset``: the first batch, as a fetch
    from an offset starts at the batch that holds it."""
    header = parse_header(records)
    if not header.base_offset <= offset <= header.last_offset:
        return None
    return header.log_append_time
