"""Up to N records of each partition from a given offset, read once: a look, not a consumer.

Why not a consumer: a consumer reads ahead (its fetch loop sends the next Fetch as soon as an
answer arrives) and asks for up to ``max_partition_fetch_bytes`` a partition, which is what a
stream wants. A look at a few records in each of a thousand partitions (the console's find by
time) wants neither: the read ahead makes every leader read every partition twice, and whatever
a fetch brings is decoded. Here each round sends one Fetch per leader for the partitions still
short of their records, asking each for about ``limit`` records' worth of bytes (the broker
sends at least the batch holding the offset, whole), decodes only until each partition has
``limit`` records, and stops a partition at its high watermark. Rounds repeat for the rest, up
to ``ROUNDS_MAX``; a partition whose leader moved is asked again after a metadata refresh, as
``list_offsets`` does.
"""

from __future__ import annotations

import asyncio

from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._fetcher import CompletedFetch, PartitionState, split_batches
from ._offsets import group_by_topic, split_by_leader
from ._types import ConsumerRecord, TopicPartition
from .errors import TslogError, error_for

_FETCH = ApiKey.FETCH  # read per request (see ApiKey)
BYTES_PER_RECORD = 128  # asked per wanted record: one small record's batch, whole
RESPONSE_BYTES = 64 << 20  # the broker's fetch_max_bytes lowers it
ROUNDS_MAX = 16
_RAW = (None, None)  # no deserializers: keys and values as bytes


async def read_records(cluster: Cluster, positions: dict[TopicPartition, int],
                       limit: int) -> dict[TopicPartition, list[ConsumerRecord]]:
    """{tp: offset} -> {tp: up to ``limit`` records from that offset}, fewer where the
    partition ends first (or ``ROUNDS_MAX`` rounds did not bring them all).

    Raises:
        A ``TslogError`` subclass naming the partition for an error that a metadata refresh
        does not mend (an unknown topic, a denial, an offset out of range), or one that it
        did not mend in ``ROUNDS_MAX`` rounds (no leader).
    """
    for topic in {tp.topic for tp in positions}:
        await cluster.ensure_topic(topic)
    found = {tp: [] for tp in positions}
    states = {}
    for tp, offset in positions.items():
        states[tp] = PartitionState()
        states[tp].position = offset
    remaining = {tp for tp in positions if limit > 0}
    failing: dict[TopicPartition, TslogError] = {}  # asked again after a metadata refresh
    for attempt in range(ROUNDS_MAX):
        if not remaining:
            return found
        remaining = await _round(cluster, remaining, states, found, limit, failing)
        if failing:
            await asyncio.sleep(cluster.backoff_s(attempt))
            await cluster.refresh_metadata()
    if failing:
        raise next(iter(failing.values()))
    return found


async def _round(cluster: Cluster, partitions: set, states: dict, found: dict, limit: int,
                 failing: dict) -> set:
    """One Fetch per leader; returns the partitions still short of records, and keeps in
    ``failing`` those whose leader must be found again."""
    by_node, leaderless = split_by_leader(
        cluster, {tp: states[tp].position for tp in partitions},
        lambda offset: {"fetch_offset": offset, "max_bytes": limit * BYTES_PER_RECORD})
    replies = await asyncio.gather(*(cluster.request(node, _FETCH, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": RESPONSE_BYTES,
        "topics": group_by_topic(parts)}) for node, parts in by_node.items()))
    failing.clear()
    for tp in leaderless:
        failing[tp] = error_for(5)(f"read {tp.topic}-{tp.partition}: no leader known")
    for body in replies:
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                if tp in partitions and part["error_code"]:
                    failing[tp] = _refusal(tp, part["error_code"])
                elif tp in partitions:
                    _absorb(tp, part, states[tp], found[tp], limit)
    return {tp for tp in partitions if tp in failing or (
        len(found[tp]) < limit and states[tp].position < states[tp].high_watermark)}


def _refusal(tp: TopicPartition, code: int) -> TslogError:
    """The error for a partition's code: raised at once unless a new leader may mend it."""
    error: TslogError = error_for(code)(f"read {tp.topic}-{tp.partition}")
    if not error.invalid_metadata:
        raise error
    return error


def _absorb(tp: TopicPartition, part: dict, state: PartitionState, records: list,
            limit: int) -> None:
    """Take the answer's records for ``tp`` and its high watermark."""
    state.high_watermark = part["high_watermark"]
    batches, _ = split_batches(part["records"])
    if batches:
        records += CompletedFetch(tp, 0, batches, -1).take(state, limit - len(records), _RAW)
