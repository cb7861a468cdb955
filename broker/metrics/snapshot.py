"""Per-partition and per-group state, copied on the event loop for a scrape to read.

Why a snapshot on the loop: appends, the replica states and the group offsets belong to the
event loop, while Prometheus scrapes arrive on the exposition server's thread; reading a
log while an append changes it could give torn values. So a scrape hands the reading to the
loop (``snapshot_from_thread``) and formats plain numbers afterwards in its own thread.
Retention runs in a worker thread beside the loop: the lag's header reads take the log's
lock like every read (``storage/headers.py``); the sizes and offsets read here are plain
attributes, at worst one retention pass old.

The loop yields every ``_CHUNK`` partitions, so a broker with many partitions keeps serving
requests while a scrape is taken; every partition's row and lag are consistent in themselves.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from typing import NamedTuple

from ..groups import GroupState
from ..storage import PartitionLog
from .lag import partition_lag
from .sources import ScrapeSources

log = logging.getLogger("tslog.broker.metrics")

_CHUNK = 256


class PartitionRow(NamedTuple):
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    segments: int


class LagRow(NamedTuple):
    group: str
    topic: str
    partition: int
    records: int
    age_seconds: float
    span_seconds: float


class GroupRow(NamedTuple):
    group: str
    state: GroupState
    members: int
    group_epoch: int  # every bump is one rebalance (a new target assignment)


@dataclass
class Snapshot:
    partitions: list[PartitionRow] = field(default_factory=list)
    lags: list[LagRow] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)
    index_bytes: dict[str, int] = field(
        default_factory=lambda: {"offset": 0, "time": 0, "create_time": 0})


def high_watermark(sources: ScrapeSources, topic: str, partition: int, plog: PartitionLog) -> int:
    """The offset below which records are committed and served to consumers: the replica
    manager's (leader: min log end over the ISR; follower: as the leader last said). A log
    the manager has not looked at yet has had no append since startup: its log end offset."""
    part = sources.replicas.partitions.get((topic, partition))
    if part is not None and part.log is plog:
        return part.high_watermark
    return plog.log_end_offset


def partition_row(sources: ScrapeSources, topic: str, partition: int, plog: PartitionLog,
                  snapshot: Snapshot) -> None:
    """Add one partition's row and its index bytes to ``snapshot``. A dormant log (closed
    cleanly, unused since the start: a single node's, so its high watermark is its end)
    answers from its directory's facts, read once, and stays unopened."""
    facts = plog.facts()
    if facts is not None:
        end = facts.log_end_offset
        snapshot.partitions.append(PartitionRow(
            topic, partition, facts.log_start_offset, end, end, facts.size_bytes,
            len(facts.segment_sizes)))
        index_bytes = facts.index_bytes
    else:
        segments = plog.segments
        snapshot.partitions.append(PartitionRow(
            topic, partition, plog.log_start_offset, plog.log_end_offset,
            high_watermark(sources, topic, partition, plog),
            sum(segment.size for segment in segments), len(segments)))
        index_bytes = plog.index_bytes()
    totals = snapshot.index_bytes
    for kind, size in index_bytes.items():
        totals[kind] += size


def group_rows(sources: ScrapeSources, snapshot: Snapshot) -> None:
    """Every consumer group's state, member count and epoch, from the coordinator. Only the
    controller coordinates groups, so only it reports them: one series per group per cluster."""
    cluster = sources.cluster
    if cluster.controller_id() != cluster.node_id:
        return
    coordinator = sources.coordination.coordinator
    if coordinator is None:  # a controller still loading the groups' state: none to report
        return
    for listing in coordinator.list_groups():
        described = coordinator.describe(listing.group_id)
        snapshot.groups.append(GroupRow(listing.group_id, described.state,
                                        len(described.members), described.group_epoch))


def group_lags(sources: ScrapeSources, group: str, offsets: dict, snapshot: Snapshot,
               now_ms: int) -> None:
    """Add the lag of every partition ``group`` committed an offset for (deleted topics and
    negative "no position" offsets have none). Only the partition's leader reports it: every
    broker of a cluster knows every group's offsets (from etcd), and the leader's high
    watermark is the authoritative one, so each series comes from exactly one broker."""
    cluster = sources.cluster
    for (topic, partition), (committed, _metadata) in offsets.items():
        plog = sources.topics.get_log(topic, partition)
        if plog is None or committed < 0:
            continue
        state = cluster.partition_state(topic, partition)
        if state is None or state.leader != cluster.node_id:
            continue
        lag = partition_lag(plog, committed, high_watermark(sources, topic, partition, plog),
                            now_ms)
        snapshot.lags.append(LagRow(group, topic, partition, lag.records, lag.age_seconds,
                                    lag.span_seconds))


def take_snapshot(sources: ScrapeSources) -> Snapshot:
    """All of it at once: for callers that own the logs (tests, the loop between yields)."""
    snapshot = Snapshot()
    for (topic, partition), plog in list(sources.topics.logs.items()):
        partition_row(sources, topic, partition, plog, snapshot)
    now_ms = sources.now_ms()
    for group, offsets in sources.groups.all_groups().items():
        group_lags(sources, group, offsets, snapshot, now_ms)
    group_rows(sources, snapshot)
    return snapshot


async def take_snapshot_async(sources: ScrapeSources) -> Snapshot | None:
    """``take_snapshot`` on the loop, yielding between chunks of partitions and groups.
    Returns None once the broker is closing its logs (checked after every yield)."""
    snapshot = Snapshot()
    work = 0
    lifecycle, topics = sources.lifecycle, sources.topics
    if lifecycle.closing:
        return None
    for (topic, partition), plog in list(topics.logs.items()):
        if lifecycle.closing:
            return None
        if topics.logs.get((topic, partition)) is not plog:  # deleted meanwhile
            continue
        partition_row(sources, topic, partition, plog, snapshot)
        work += 1
        if work % _CHUNK == 0:
            await asyncio.sleep(0)
    now_ms = sources.now_ms()
    for group, offsets in sources.groups.all_groups().items():
        group_lags(sources, group, offsets, snapshot, now_ms)
        work += len(offsets)
        if work >= _CHUNK:
            work = 0
            await asyncio.sleep(0)
            if lifecycle.closing:
                return None
    group_rows(sources, snapshot)
    return snapshot


def snapshot_from_thread(sources: ScrapeSources, loop: asyncio.AbstractEventLoop,
                         timeout_s: float) -> Snapshot | None:
    """Take a snapshot on ``loop`` from another thread; None if the loop cannot answer in
    ``timeout_s`` (busy or stopping): the scrape then goes without these series."""
    try:
        if asyncio.get_running_loop() is loop:  # called on the loop itself: no hand-off
            return None if sources.lifecycle.closing else take_snapshot(sources)
    except RuntimeError:
        pass
    try:
        future = asyncio.run_coroutine_threadsafe(take_snapshot_async(sources), loop)
    except RuntimeError:  # the loop is closed
        return None
    try:
        return future.result(timeout_s)
    except FutureTimeoutError:
        future.cancel()
        log.warning("metrics snapshot took longer than %.1f s; scrape without partition state",
                    timeout_s)
    except Exception:
        log.exception("metrics snapshot failed")
    return None
