"""Records per time bucket, from the time index alone (no record is read).

How: the offset of the first record at or after a moment is what the time index answers.
The records appended in [t0, t1) in a partition are then ``offset(t1) - offset(t0)``, where a
moment after the last record resolves to the log end. A chart of N buckets asks N + 1 edges
of every partition in one OffsetsAtTimes request per leader (``edge_offsets``),
which each leader answers in one pass over each partition's sorted edges, looking up only the
edges whose answer can differ from the previous edge's. Exact for LogAppendTime (it never
decreases in a partition); for CreateTime it follows the create-time index, whose entries are
the largest CreateTime so far (Kafka's semantics): exact when producers' clocks only move
forward.

Records deleted by retention before the window's start are not counted: a boundary before the
log start resolves to the log start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tslog.client.aio import AsyncAdmin, TopicPartition


BUCKET_MS = {"second": 1000, "minute": 60_000, "hour": 3_600_000}
BUCKETS_MAX = 1500  # a day by minute is 1,440; the edges stay under the broker's 2,048


class WindowError(ValueError):
    """A window the chart cannot draw (too many buckets, end before start)."""


@dataclass(frozen=True)
class Traffic:
    bucket_ms: int
    starts_ms: list  # start of each bucket (epoch ms), aligned to bucket_ms
    partitions: list  # the partitions, sorted: the rows of ``counts``
    counts: np.ndarray  # records per (partition, bucket), int64

    @property
    def totals(self) -> list:
        return self.counts.sum(axis=0).tolist()

    def first(self, count: int) -> list:
        """[(partition, [records per bucket])] of the first ``count`` partitions."""
        return list(zip(self.partitions[:count], self.counts[:count].tolist()))


def boundaries(from_ms: int, to_ms: int, bucket_ms: int) -> list:
    """Bucket edges from the bucket holding ``from_ms`` to the one holding ``to_ms``,
    aligned to whole buckets in UTC, so two charts of one topic line up."""
    if to_ms < from_ms:
        raise WindowError("the window ends before it starts")
    first = from_ms - from_ms % bucket_ms
    last = to_ms - to_ms % bucket_ms + bucket_ms
    count = (last - first) // bucket_ms
    if count > BUCKETS_MAX:
        raise WindowError(f"{count} buckets of {bucket_ms} ms is more than {BUCKETS_MAX}: "
                          "pick a larger bucket or a shorter window")
    return [first + index * bucket_ms for index in range(count + 1)]


async def edge_offsets(admin: AsyncAdmin, topic: str, partitions: list, edges: list,
                       timestamp_type: str = "append") -> dict:
    """{partition: [offset at each edge, -1 where no record is that late]}: one
    OffsetsAtTimes request per leader (``AsyncAdmin.offset_columns``)."""
    tps = [TopicPartition(topic, partition) for partition in partitions]
    columns = await admin.offset_columns(tps, edges, timestamp_type)
    return {tp.partition: columns[tp] for tp in tps}


def traffic(edges: list, offsets: dict, ends: dict) -> Traffic:
    """Records per bucket per partition between ``edges`` (from ``boundaries``), from
    ``edge_offsets``' answer and each partition's log end ({partition: offset}). The answer
    lists become one matrix: the counts are worked out column-wise, with Python work per
    partition, not per (partition, edge)."""
    partitions = sorted(offsets)
    counts = bucket_counts([offsets[p] for p in partitions], [ends[p] for p in partitions],
                           len(edges))
    return Traffic(edges[1] - edges[0], edges[:-1], partitions, counts)


def bucket_counts(offsets: list, ends: list, edges: int) -> np.ndarray:
    """Records per (partition, bucket) from each partition's offsets at the edges (-1: no
    record that late, read as its log ``end``): ``offset(t1) - offset(t0)``, never below 0
    (a CreateTime edge may find an earlier offset than the edge before it)."""
    matrix = np.array(offsets, dtype=np.int64).reshape(len(offsets), edges)
    last = np.array(ends, dtype=np.int64).reshape(-1, 1)
    matrix = np.where(matrix < 0, last, matrix)
    return np.maximum(np.diff(matrix, axis=1), 0)
