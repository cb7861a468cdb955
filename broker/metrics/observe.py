"""What the server calls as it works: constant Python per request, per partition or per batch.

Why here and not inline in the handlers: the handlers say what happened (a produce appended
these bytes, a fetch answered this body), and this module decides how it is counted, with
children bound once (``definitions.API``, ``topic_metrics``). Nothing here decodes a record:
record counts come from offsets or batch headers, CreateTime from the header.
"""

from __future__ import annotations

import time

from tslog.protocol.batch_header import count_records

from .definitions import (
    GROUP_COMMITS,
    RECOVERY_DURATION,
    RECOVERY_TRUNCATED_BYTES,
    TIME_LOOKUP_DURATION,
    TIME_LOOKUP_SCANNED_BYTES,
    ApiMetrics,
    topic_metrics,
)

_NESTED = ("topics", "resources")


def finish_request(api: ApiMetrics, body: dict | None, started: float) -> None:
    """Count one answered request: its duration and every error code in its response."""
    api.finish(time.perf_counter() - started)
    if body is not None:
        count_errors(api, body)


def count_errors(api: ApiMetrics, body: dict) -> None:
    """One increment per nonzero ``error_code`` at the top level, per topic/resource and per
    partition: the places responses carry codes (docs/protocol.md)."""
    code = body.get("error_code")
    if code:
        api.error(code).inc()
    for key in _NESTED:
        entries = body.get(key)
        if not entries:
            continue
        for entry in entries:
            code = entry.get("error_code")
            if code:
                api.error(code).inc()
            partitions = entry.get("partitions")
            if partitions:
                for result in partitions:
                    if type(result) is dict:
                        code = result.get("error_code")
                        if code:
                            api.error(code).inc()


def finish_kafka_request(api: ApiMetrics, body: dict | None, started: float) -> None:
    """``finish_request`` for a Kafka response: its codes sit at the top level and in any
    list of entries (``topics``, ``responses``, ``results``, ``coordinators``, ``members``)
    and the lists inside those (``partitions``, ``partition_responses``), whatever the API
    calls them."""
    api.finish(time.perf_counter() - started)
    if body is None:
        return
    code = body.get("error_code")
    if code:
        api.error(code).inc()
    for entries in body.values():
        if type(entries) is not list:
            continue
        for entry in entries:
            if type(entry) is not dict:
                continue
            code = entry.get("error_code")
            if code:
                api.error(code).inc()
            for inner in entry.values():
                if type(inner) is list:
                    for result in inner:
                        if type(result) is dict:
                            code = result.get("error_code")
                            if code:
                                api.error(code).inc()


def observe_produce(topic: str, records: int, size: int, log_append_time: int,
                    max_create_time: int) -> None:
    """One partition's successful append: ``records`` records in ``size`` bytes, stamped
    ``log_append_time``; ``max_create_time`` is the largest CreateTime among its batches."""
    metrics = topic_metrics(topic)
    metrics.produced_records.inc(records)
    metrics.produced_bytes.inc(size)
    metrics.end_to_end.observe(max(0, log_append_time - max_create_time) / 1000)


def observe_fetched(partitions, results) -> None:
    """Count the records and bytes of a consumer's Fetch (the data service's ``partitions``
    requested and ``results`` beside them; one hop per batch)."""
    metrics = topic = None
    for entry, result in zip(partitions, results):
        records = result[3]  # a Fetched's records, beside its FetchPartition
        if records:
            if entry[0] != topic:
                topic = entry[0]
                metrics = topic_metrics(topic)
            metrics.fetched_bytes.inc(len(records))
            metrics.fetched_records.inc(count_records(records))


# The histograms' one (unlabelled) child each, bound once: a request's two observations are
# then a call each, not two (the family's ``observe`` finds the child first).
_LOOKUP_DURATION = TIME_LOOKUP_DURATION.labels()
_LOOKUP_SCANNED_BYTES = TIME_LOOKUP_SCANNED_BYTES.labels()


def observe_lookups(count: int, duration_s: float, scanned_bytes: int) -> None:
    """One ListOffsets' ``count`` lookups by time, which took ``duration_s`` and read
    ``scanned_bytes`` of log in all: counted once per request, each lookup at the request's
    mean (a ListOffsets for ten thousand partitions costs two observations, not twenty
    thousand), so the histograms' counts and sums are exact and their buckets hold means."""
    _LOOKUP_DURATION.observe_many(duration_s / count, count)
    _LOOKUP_SCANNED_BYTES.observe_many(scanned_bytes / count, count)


def record_recovery(logs) -> None:
    """Startup: how long opening (and recovering) the logs took, summed over the logs as
    storage measured it (so a cluster's wait for etcd is not counted), and how many bytes
    recovery cut off."""
    logs = list(logs)
    RECOVERY_DURATION.set(sum(plog.recovery_report.duration_s for plog in logs))
    RECOVERY_TRUNCATED_BYTES.set(sum(plog.recovery_report.bytes_truncated for plog in logs))


def observe_commit(group_id: str) -> None:
    """One OffsetCommit whose offsets were stored for ``group_id``."""
    GROUP_COMMITS.labels(group_id).inc()


def forget_group(group_id: str) -> None:
    """Drop a deleted group's commit counter, so deleted groups do not pile up in every scrape
    (its other series come from the coordinator and the offsets, which no longer have it)."""
    GROUP_COMMITS.remove(group_id)
