"""Kafka's DescribeLogDirs (35): where this broker keeps which partitions, and how big they
are. ``kafka-reassign-partitions --generate`` asks every broker for it before proposing a
plan (it prints each replica's log directory), and ``kafka-log-dirs`` prints it.

A tslog broker has one log directory, its ``data_dir``: every partition it hosts is there,
with its size in bytes (its segments' sizes). ``OffsetLag`` is Kafka's lag of a future log
behind the current one while a replica moves between a broker's directories; tslog has one
directory and no future logs, so it is 0 (the lag of a replica a reassignment adds is in
ListPartitionReassignments' progress and the metrics). Kafka's rule: Describe on the
cluster, else CLUSTER_AUTHORIZATION_FAILED and no directories; judged, with the rest of the
partition admin APIs, by the connection's ``GatedPartitionAdmin`` in front of the service
(``admin/partitions.py``), which this adapter calls with a typed request.
"""

from __future__ import annotations

from ...admin.partition_requests import DescribeLogDirsRequest
from ...data.requests import RequestDenied
from .request_info import KafkaRequestInfo
from .services import KafkaServices


def describe_log_dirs(services: KafkaServices, body: dict, version: int,
                      info: KafkaRequestInfo) -> dict:
    named = None if body["topics"] is None else [
        (t["topic"], p) for t in body["topics"] for p in t["partitions"]]
    found = services.partition_admin.describe_log_dirs(DescribeLogDirsRequest(named))
    if type(found) is RequestDenied:
        return {"throttle_time_ms": 0, "error_code": found.error_code, "results": []}
    grouped: dict[str, list[dict]] = {}
    for topic, partition, size in found.partitions:
        grouped.setdefault(topic, []).append({
            "partition_index": partition, "partition_size": size, "offset_lag": 0,
            "is_future_key": False})
    return {"throttle_time_ms": 0, "error_code": 0, "results": [{
        "error_code": 0, "log_dir": found.log_dir, "total_bytes": found.total_bytes,
        "usable_bytes": found.usable_bytes, "is_cordoned": False,
        "topics": [{"name": name, "partitions": parts} for name, parts in grouped.items()]}]}


LOG_DIRS_ADAPTERS = {35: describe_log_dirs}  # DescribeLogDirs: tslog's protocol has no twin
