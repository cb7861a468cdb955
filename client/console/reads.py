"""What the console's cluster and topic pages show, read through the public async client.

Why a module of its own: the pages only format; every number they print comes from here, so a
test can compare these readings with the client's answers without parsing HTML. Everything is
read fresh per page (the console keeps no cache that could go stale behind an operator's back):
one Metadata, and one ListOffsets per question (earliest, latest, max timestamp) for all the
partitions at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tslog.client.aio import AsyncAdmin, TopicPartition

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


@dataclass(frozen=True)
class BrokerRow:
    node_id: int
    host: str
    port: int
    is_controller: bool
    leaders: int  # partitions this broker leads
    replicas: int  # partition replicas it hosts
    metrics_url: str | None  # from --metrics NODE=URL; the protocol does not announce it


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    leader: int
    replicas: list
    isr: list
    start_offset: int
    end_offset: int
    earliest_ms: int | None  # LogAppendTime of the first record still in the log
    latest_ms: int | None  # largest LogAppendTime (ListOffsets MAX_TIMESTAMP)

    @property
    def records(self) -> int:
        return self.end_offset - self.start_offset

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.leader < 0


@dataclass(frozen=True)
class ClusterView:
    brokers: list  # of BrokerRow
    controller_id: int
    topics: dict  # name -> partition count
    under_replicated: list  # of (topic, partition)
    offline: list  # of (topic, partition)


async def cluster_view(admin: AsyncAdmin, metrics_urls: dict[int, str]) -> ClusterView:
    """Brokers, controller, partitions per broker, leaders and unhealthy partitions."""
    brokers, controller = await admin.describe_cluster()
    descriptions = (await admin.describe_topics()).values()
    leaders: dict[int, int] = {}
    replicas: dict[int, int] = {}
    under, offline = [], []
    for description in descriptions:
        for info in description.partitions:
            leaders[info.leader] = leaders.get(info.leader, 0) + 1
            for node in info.replicas:
                replicas[node] = replicas.get(node, 0) + 1
            if info.leader < 0:
                offline.append((description.name, info.partition))
            elif len(info.isr) < len(info.replicas):
                under.append((description.name, info.partition))
    rows = [BrokerRow(node, host, port, node == controller, leaders.get(node, 0),
                      replicas.get(node, 0), metrics_urls.get(node))
            for node, (host, port) in sorted(brokers.items())]
    return ClusterView(rows, controller, {d.name: len(d.partitions) for d in descriptions},
                       under, offline)


async def bounds(admin: AsyncAdmin, partitions: list) -> dict:
    """{tp: (log start offset, log end offset)}: two ListOffsets for all of them."""
    starts, ends = await asyncio.gather(
        admin.list_offsets({tp: EARLIEST for tp in partitions}),
        admin.list_offsets({tp: LATEST for tp in partitions}))
    return {tp: (starts[tp].offset if starts[tp] else 0, ends[tp].offset if ends[tp] else 0)
            for tp in partitions}


async def partition_rows(admin: AsyncAdmin, description) -> list:
    """Per partition of a described topic (``AsyncAdmin.describe_topic``; the topic page
    asks its chart's edges from the same description meanwhile): leader, replicas, ISR,
    offsets, record count, earliest and latest time.

    The first record (a time lookup at 0 lands on it: LAT never decreases) gives both the log
    start and the earliest time; latest is ListOffsets' MAX_TIMESTAMP. Three ListOffsets in
    all, sent together."""
    topic = description.name
    partitions = [TopicPartition(topic, info.partition) for info in description.partitions]
    ends, firsts, lasts = await asyncio.gather(
        admin.list_offsets({tp: LATEST for tp in partitions}),
        admin.list_offsets({tp: 0 for tp in partitions}),
        admin.list_offsets({tp: MAX_TIMESTAMP for tp in partitions}))
    rows = []
    for info, tp in zip(description.partitions, partitions):
        first, last = firsts[tp], lasts[tp]
        end = ends[tp].offset if ends[tp] is not None else 0
        start = first.offset if first is not None else end
        empty = end <= start
        rows.append(PartitionRow(topic, info.partition, info.leader, list(info.replicas),
                                 list(info.isr), start, end,
                                 None if empty or first is None else first.timestamp,
                                 None if empty or last is None or last.timestamp < 0
                                 else last.timestamp))
    return rows


async def topic_configs(admin: AsyncAdmin, topic: str) -> list:
    """[(name, value, source)] sorted by name: topic configs carry no secrets."""
    entries = await admin.describe_configs(topic)
    return sorted((e.name, e.value, e.source) for e in entries.values())
