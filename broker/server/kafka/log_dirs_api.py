"""Kafka's DescribeLogDirs (35): where this broker keeps which partitions, and how big they
are. ``kafka-reassign-partitions --generate`` asks every broker for it before proposing a
plan (it prints each replica's log directory), and ``kafka-log-dirs`` prints it.

A tslog broker has one log directory, its ``data_dir``: every partition it hosts is there,
with its size in bytes (its segments' sizes). ``OffsetLag`` is Kafka's lag of a future log
behind the current one while a replica moves between a broker's directories; tslog has one
directory and no future logs, so it is 0 (the lag of a replica a reassignment adds is in
ListPartitionReassignments' progress and the metrics). Kafka's rule: Describe on the
cluster, else CLUSTER_AUTHORIZATION_FAILED and no directories.
"""

from __future__ import annotations

import os
import shutil

from tslog.protocol.errors import ErrorCode

from ...security.acl import CLUSTER_NAME
from .request_info import KafkaRequestInfo
from .services import KafkaServices


def _allowed(services: KafkaServices, info: KafkaRequestInfo) -> bool:
    authorizer = services.authorizer
    return authorizer is None or authorizer.authorize(info.principal, "Describe", "cluster",
                                                      CLUSTER_NAME, info.client_host)


def describe_log_dirs(services: KafkaServices, body: dict, version: int,
                      info: KafkaRequestInfo) -> dict:
    if not _allowed(services, info):
        return {"throttle_time_ms": 0, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                "results": []}
    wanted = None if body["topics"] is None else {
        (t["topic"], p) for t in body["topics"] for p in t["partitions"]}
    grouped: dict[str, list[dict]] = {}
    for (topic, partition), plog in sorted(services.topics.logs.items()):
        if wanted is None or (topic, partition) in wanted:
            grouped.setdefault(topic, []).append({
                "partition_index": partition, "partition_size": plog.size_bytes,
                "offset_lag": 0, "is_future_key": False})
    data_dir = os.path.abspath(services.config.data_dir)
    try:
        usage = shutil.disk_usage(data_dir)
        total, usable = usage.total, usage.free
    except OSError:  # the directory vanished under the broker: sizes unknown, as Kafka says
        total = usable = -1
    return {"throttle_time_ms": 0, "error_code": 0, "results": [{
        "error_code": 0, "log_dir": data_dir, "total_bytes": total, "usable_bytes": usable,
        "is_cordoned": False,
        "topics": [{"name": name, "partitions": parts} for name, parts in grouped.items()]}]}


LOG_DIRS_ADAPTERS = {35: describe_log_dirs}  # DescribeLogDirs: tslog's protocol has no twin
