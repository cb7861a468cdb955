"""Many time lookups in one partition log in one pass: the offsets at a sorted list of times.

Why: a chart of records per time bucket asks every bucket edge of every partition ("the first
offset at or after T"), and asking them one ListOffsets at a time pays a request, a lock and
a full index search per edge. This walks the sorted times once per partition and asks the
log's own lookup (``PartitionLog.offset_for_time``: the segment bisect, the index search, the
scan of one index interval) only where the answer can differ from the previous one:

- once a time finds nothing (no record that late), no later time can find anything;
- once a time T finds the record R with time ``t(R) >= T``, every record before R is earlier
  than T, so for each later time T' <= t(R) the answer is R again, with no lookup at all.

Both hold for LogAppendTime and for CreateTime alike (each answer is "the first record whose
time is >= T"), so the answers are exactly what one ``offset_for_time`` per time would give.
No second index search is written here: the skipping is the only new logic.
"""

from __future__ import annotations

from typing import Sequence

from .types import OffsetAndTimestamp

MAX_TIMES = 2048  # per partition and request; a chart draws at most 1,500 buckets


class TimeSeriesError(ValueError):
    """Times that are not a sorted list of at most MAX_TIMES non-negative milliseconds."""


def check_times(timestamps: Sequence[int]) -> None:
    """Raise TimeSeriesError unless ``timestamps`` is sorted, non-negative and not too long."""
    if len(timestamps) > MAX_TIMES:
        raise TimeSeriesError(f"{len(timestamps)} times is more than {MAX_TIMES}")
    if timestamps and timestamps[0] < 0:
        raise TimeSeriesError("times must be >= 0 (the special ListOffsets times are not "
                              "accepted here)")
    if any(later < earlier for earlier, later in zip(timestamps, timestamps[1:])):
        raise TimeSeriesError("times must be sorted in ascending order")


def offsets_for_times(log, timestamps: Sequence[int], timestamp_type: str = "append"
                      ) -> tuple[list[OffsetAndTimestamp | None], int]:
    """(one answer per time, in order; the number of index lookups it took).

    ``log``: a ``PartitionLog``. Each answer is what ``log.offset_for_time(T,
    timestamp_type)`` answers: the first record whose time is >= T, or None.
    Raises TimeSeriesError for times ``check_times`` refuses.
    """
    check_times(timestamps)
    answers: list[OffsetAndTimestamp | None] = []
    lookups = 0
    found: OffsetAndTimestamp | None = None
    for timestamp in timestamps:
        if found is None and lookups:
            answers.append(None)  # nothing at an earlier time: nothing now either
            continue
        if found is None or found.timestamp < timestamp:
            found = log.offset_for_time(timestamp, timestamp_type)
            lookups += 1
        answers.append(found)
    return answers, lookups
