"""OffsetsAtTimes (tslog's api key 1000): many times per partition in one request, each
answered as ListOffsets answers one time.

Why its own API and not a ListOffsets field: ListOffsets' shape and meaning stay Kafka's (one
time per partition, special times -1/-2/-3), and a chart of B buckets over P partitions would
otherwise cost B requests of P lookups each. Here one request carries every edge, and
storage's ``time_series.offsets_for_times`` walks each partition's sorted times once, skipping
the lookups whose answer it already knows. As ListOffsets does for a consumer, an answer is
only a committed record (below the high watermark), -1 where none is.

A partition's times must be sorted, non-negative and at most ``MAX_TIMES``: otherwise that
partition gets INVALID_REQUEST and the others are answered. The work is synchronous on the
event loop, like ListOffsets; its size is bounded by that cap and the frame size.
"""

from __future__ import annotations

import time

from tslog.protocol.errors import ErrorCode

from ..data.error_codes import TOPIC_DENIED, error_code_for, missing_code
from ..metrics.observe import observe_lookups
from ..replication.partition import LEADER
from ..storage.time_series import TimeSeriesError, answer_runs
from .partition_requests import OffsetsAtTimesRequest, TimesFound

_INVALID_REQUEST = ErrorCode.INVALID_REQUEST  # read per partition (see ApiKey's note)
_NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER


def offsets_at_times(admin, request: OffsetsAtTimesRequest,
                     denied: frozenset = frozenset()) -> list[TimesFound]:
    """Per query, in order: an offset and a time per asked time, or an error code.
    ``admin``: the ``PartitionAdmin`` (its ``replicas`` and ``topics``). A lookup path, so
    as the data service's: a loop, and each result a plain tuple of ``TimesFound``'s
    fields."""
    timestamp_type = request.timestamp_type
    results = []
    for topic, partition, timestamps in request.queries:
        if topic in denied:
            results.append((TOPIC_DENIED, [], []))
        else:
            results.append(_answer(admin, topic, partition, timestamps, timestamp_type))
    return results


def _answer(admin, topic: str, partition: int, timestamps: list,
            timestamp_type: str) -> TimesFound:
    part = admin.replicas.get(topic, partition)
    if part is None:
        return (missing_code(admin.topics, topic, partition), [], [])
    if part.role != LEADER:
        return (_NOT_LEADER, [], [])
    plog = part.log
    limit = part.high_watermark
    scanned = plog.lookup_bytes_read
    started = time.perf_counter()
    try:
        runs, lookups = answer_runs(plog, timestamps, timestamp_type)
    except TimeSeriesError:
        return (_INVALID_REQUEST, [], [])
    except Exception as exc:  # noqa: BLE001 - a closed log, a disk error: a code, logged
        code = error_code_for(exc, f"offsets at times {topic}-{partition}")
        return (code, [], [])
    if lookups:  # each lookup at the partition's mean, as ListOffsets (O(1) per partition)
        observe_lookups(lookups, time.perf_counter() - started, plog.lookup_bytes_read - scanned)
    offsets, times = [], []
    for covered, answer in runs:  # a run per lookup; the lists grow in C
        if answer is None or answer.offset >= limit:
            offsets += [-1] * covered
            times += [-1] * covered
        else:
            offsets += [answer.offset] * covered
            times += [answer.timestamp] * covered
    return (0, offsets, times)
