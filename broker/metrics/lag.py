"""Consumer-group lag of one partition: in records, as the age of the oldest unread record,
and as the LogAppendTime span of the unread records.

Definitions (the README's metrics list says the same):

- ``HW`` is the partition's high watermark, ``C`` the group's committed offset (the next
  offset the group will read). ``LAT(o)`` is the LogAppendTime of the record at offset ``o``,
  which is its batch's LAT (every record of a batch shares it). ``now`` is the broker's clock,
  the one LATs are stamped from.
- caught up (``C >= HW``, including a commit past the end): 0 records, 0 seconds (both kinds).
- otherwise, records: ``HW - C`` (Kafka's definition; it counts records retention already
  deleted, because the group never read them).
- otherwise, age (``tslog_consumer_group_lag_seconds``): ``now - LAT(max(C, log start))``:
  how long ago the next record the group will read was appended. It keeps growing while the
  group stands still, whether or not anything new is produced, which is what "the group is
  90 s behind" means to an operator.
- otherwise, span (``tslog_consumer_group_backlog_span_seconds``): ``LAT(HW - 1) -
  LAT(max(C, log start))``: how much older the next record the group will read is than the
  newest record it may read. It stays put while nothing is produced, so it says how much
  history is waiting, not how late the group is.

If retention deleted the record at ``C``, the oldest record still in the log stands in for
it, so both seconds are lower bounds (the deleted ones were older). Neither is ever negative
(a clock stepped back makes the age 0 until it catches up).

In a cluster the broker storing the group's offsets reports its lag, for the partitions it
holds a replica of, against that replica's high watermark (see ``snapshot.high_watermark``).

Why seconds from LAT and not from CreateTime: LAT never decreases in a partition and is
stamped by the broker, so both values are real ages that producers' clocks cannot distort.

Cost: two header reads (an index bisect, at most one index interval of headers each) per
(group, partition), under the log's lock (retention runs in a thread); never a scan.
"""

from __future__ import annotations

from typing import NamedTuple

from ..storage import OffsetOutOfRangeError, PartitionLog
from ..storage.headers import header_at


class PartitionLag(NamedTuple):
    records: int
    age_seconds: float   # now - LAT of the next record to read
    span_seconds: float  # LAT of the newest readable record - LAT of the next record to read


CAUGHT_UP = PartitionLag(0, 0.0, 0.0)


def log_append_time_at(plog: PartitionLog, offset: int) -> int:
    """LAT of the record at ``offset``, which must lie in [log start, log end)."""
    return header_at(plog, offset).log_append_time


def partition_lag(plog: PartitionLog, committed: int, high_watermark: int,
                  now_ms: int) -> PartitionLag:
    """The lag of a group committed at ``committed``, at ``now_ms`` on the broker's clock."""
    if committed >= high_watermark:
        return CAUGHT_UP
    records = high_watermark - committed
    try:
        newest = log_append_time_at(plog, high_watermark - 1)
        oldest = log_append_time_at(plog, max(committed, plog.log_start_offset))
    except OffsetOutOfRangeError:  # retention left nothing below the high watermark
        return PartitionLag(records, 0.0, 0.0)
    return PartitionLag(records, max(0, now_ms - oldest) / 1000, max(0, newest - oldest) / 1000)
