"""Many time lookups in one partition log in one pass: the offsets at a sorted list of times.

Why: a chart of records per time bucket asks every bucket edge of every partition ("the first
offset at or after T"), and asking them one ListOffsets at a time pays a request, a lock and
a full index search per edge. This walks the sorted times once per partition and asks the
log's own lookup (``PartitionLog.offset_for_time``: the segment bisect, the index search, the
scan of one index interval) only where the answer can differ from the previous one:

- once a time finds nothing (no record that late), no later time can find anything;
- once a time T finds the record R with time ``t(R) >= T``, every record before R is earlier
  than T, so for each later time T' <= t(R) the answer is R again, with no lookup at all
  (``answer_runs`` counts those times with a bisect and answers them as one run).

Both hold for LogAppendTime and for CreateTime alike (each answer is "the first record whose
time is >= T"), so the answers are exactly what one ``offset_for_time`` per time would give.
No second index search is written here: the skipping is the only new logic.
"""

from __future__ import annotations

from bisect import bisect_right as _bisect_right
from typing import Sequence

from .types import OffsetAndTimestamp

MAX_TIMES = 2048  # per partition and request; a chart draws at most 1,500 buckets


class TimeSeriesError(ValueError):
    """Times that are not a sorted list of at most MAX_TIMES non-negative milliseconds."""


def check_times(timestamps: list) -> None:
    """Raise TimeSeriesError unless ``timestamps`` is sorted, non-negative and not too long.
    The order is checked against ``sorted`` (a pass in C over a sorted list), not a Python
    comparison per time: a chart sends the same 61 or 1,441 edges for every partition."""
    if len(timestamps) > MAX_TIMES:
        raise TimeSeriesError(f"{len(timestamps)} times is more than {MAX_TIMES}")
    if timestamps and timestamps[0] < 0:
        raise TimeSeriesError("times must be >= 0 (the special ListOffsets times are not "
                              "accepted here)")
    if timestamps != sorted(timestamps):
        raise TimeSeriesError("times must be sorted in ascending order")


def answer_runs(log, timestamps: Sequence[int], timestamp_type: str = "append"
                ) -> tuple[list[tuple[int, OffsetAndTimestamp | None]], int]:
    """([(how many consecutive times, their answer)], the number of index lookups): the
    answers of ``offsets_for_times`` as runs, one per lookup. The times one answer covers
    (those up to the found record's time) are counted by a bisect, so the Python work is
    per lookup, not per time. Raises TimeSeriesError for times ``check_times`` refuses."""
    if not isinstance(timestamps, list):  # check_times compares it with a sorted list
        timestamps = list(timestamps)
    check_times(timestamps)
    runs: list[tuple[int, OffsetAndTimestamp | None]] = []
    count, i = len(timestamps), 0
    while i < count:
        found = log.offset_for_time(timestamps[i], timestamp_type)
        if found is None:  # nothing at this time: nothing at any later one either
            runs.append((count - i, None))
            break
        covered = _bisect_right(timestamps, found.timestamp, i)  # > i: times[i] <= its time
        runs.append((covered - i, found))
        i = covered
    return runs, len(runs)


def offsets_for_times(log, timestamps: Sequence[int], timestamp_type: str = "append"
                      ) -> tuple[list[OffsetAndTimestamp | None], int]:
    """(one answer per time, in order; the number of index lookups it took).

    ``log``: a ``PartitionLog``. Each answer is what ``log.offset_for_time(T,
    timestamp_type)`` answers: the first record whose time is >= T, or None.
    Raises TimeSeriesError for times ``check_times`` refuses.
    """
    runs, lookups = answer_runs(log, timestamps, timestamp_type)
    answers: list[OffsetAndTimestamp | None] = []
    for covered, found in runs:
        answers += [found] * covered
    return answers, lookups
