"""Consumer-group lag of one partition, in records and in seconds of LogAppendTime.

Definitions (the README's metrics list says the same):

- ``HW`` is the partition's high watermark, ``C`` the group's committed offset (the next
  offset the group will read). ``LAT(o)`` is the LogAppendTime of the record at offset ``o``,
  which is its batch's LAT (every record of a batch shares it).
- caught up (``C >= HW``, including a commit past the end): 0 records, 0 seconds.
- otherwise, records: ``HW - C`` (Kafka's definition; it counts records retention already
  deleted, because the group never read them).
- otherwise, seconds: ``LAT(HW - 1) - LAT(max(C, log start))``: how much older the next record
  the group will read is than the newest record it may read. If retention deleted the record
  at ``C``, the oldest record still in the log stands in for it, so the value is a lower bound
  (the deleted ones were older). Never negative.

In a cluster the broker storing the group's offsets reports its lag, for the partitions it
holds a replica of, against that replica's high watermark (see ``snapshot.high_watermark``).

Why seconds from LAT and not from CreateTime: LAT never decreases in a partition, so the
difference is a real age that producers' clocks cannot distort, and "the group is 90 s
behind" is what an operator alerts on whatever the record rate.

Cost: two header reads (an index bisect, at most one index interval of headers each) per
(group, partition), under the log's lock (retention runs in a thread); never a scan.
"""

from __future__ import annotations

from ..storage import OffsetOutOfRangeError, PartitionLog
from ..storage.headers import header_at


def log_append_time_at(plog: PartitionLog, offset: int) -> int:
    """LAT of the record at ``offset``, which must lie in [log start, log end)."""
    return header_at(plog, offset).log_append_time


def partition_lag(plog: PartitionLog, committed: int, high_watermark: int) -> tuple[int, float]:
    """(lag in records, lag in seconds) of a group committed at ``committed``."""
    if committed >= high_watermark:
        return 0, 0.0
    records = high_watermark - committed
    try:
        newest = log_append_time_at(plog, high_watermark - 1)
        oldest = log_append_time_at(plog, max(committed, plog.log_start_offset))
    except OffsetOutOfRangeError:  # retention left nothing below the high watermark
        return records, 0.0
    return records, max(0, newest - oldest) / 1000
