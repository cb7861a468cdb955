"""Records per time bucket, from the time index alone (no record is read).

How: the offset of the first record at or after a moment is what the time index answers.
The records appended in [t0, t1) in a partition are then ``offset(t1) - offset(t0)``, where a
moment after the last record resolves to the log end. A chart of N buckets asks N + 1 edges
of every partition in one OffsetsAtTimes request per leader (``AsyncAdmin.offsets_at_times``),
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

from tslog.client.aio import AsyncAdmin, TopicPartition

from .reads import LATEST

BUCKET_MS = {"second": 1000, "minute": 60_000, "hour": 3_600_000}
BUCKETS_MAX = 1500  # a day by minute is 1,440; the edges stay under the broker's 2,048


class WindowError(ValueError):
    """A window the chart cannot draw (too many buckets, end before start)."""


@dataclass(frozen=True)
class Traffic:
    bucket_ms: int
    starts_ms: list  # start of each bucket (epoch ms), aligned to bucket_ms
    per_partition: dict  # partition -> [records per bucket]

    @property
    def totals(self) -> list:
        sums = [0] * len(self.starts_ms)
        for counts in self.per_partition.values():
            for index, count in enumerate(counts):
                sums[index] += count
        return sums


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


async def traffic(admin: AsyncAdmin, topic: str, partitions: list, from_ms: int, to_ms: int,
                  bucket_ms: int, timestamp_type: str = "append",
                  ends: dict | None = None) -> Traffic:
    """Records per bucket per partition over [from, to], bucket edges aligned to UTC.

    ``ends``: {partition: log end offset} if the caller has them (the topic page does);
    else one ListOffsets asks. The edges are one OffsetsAtTimes request per leader."""
    edges = boundaries(from_ms, to_ms, bucket_ms)
    tps = [TopicPartition(topic, partition) for partition in partitions]
    if ends is None:
        latest = await admin.list_offsets({tp: LATEST for tp in tps})
        ends = {tp.partition: latest[tp].offset if latest[tp] else 0 for tp in tps}
    answers = await admin.offsets_at_times({tp: edges for tp in tps}, timestamp_type)
    per_partition = {}
    for tp in tps:
        end = ends[tp.partition]
        offsets = [found.offset if found is not None else end for found in answers[tp]]
        per_partition[tp.partition] = [max(0, later - earlier)
                                       for earlier, later in zip(offsets, offsets[1:])]
    return Traffic(bucket_ms, edges[:-1], per_partition)
