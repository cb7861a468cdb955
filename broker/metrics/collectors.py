"""Scrape-time collectors: partition state, index bytes, consumer-group lag, data-dir space.

Why computed at scrape time and not kept as gauges: these values change with every append
and every commit, but are only needed when Prometheus asks, so keeping gauges current would
put work on the hot path for nothing. A scrape takes one snapshot on the event loop
(``snapshot.py``) and turns it into metric families here, in the exposition thread.

Labels: ``topic``, ``partition``, ``group`` (all bounded by what exists on the broker) and
``kind`` of index; never offsets, client ids or addresses. ``statvfs`` of the data directory
is safe from any thread, so it is read here directly.
"""

from __future__ import annotations

import asyncio
import os
from typing import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .snapshot import Snapshot, snapshot_from_thread

_PARTITION_LABELS = ["topic", "partition"]
_LAG_LABELS = ["group", "topic", "partition"]

# (name, help, PartitionRow field)
_PARTITION_GAUGES = (
    ("tslog_log_start_offset", "First offset still in the partition's log.", "log_start_offset"),
    ("tslog_log_end_offset", "Offset the next appended record will get.", "log_end_offset"),
    ("tslog_high_watermark", "Offset below which records are committed and readable by "
     "consumers.", "high_watermark"),
    ("tslog_log_size_bytes", "Bytes of the partition's segment files.", "size_bytes"),
    ("tslog_log_segments", "Segments in the partition's log.", "segments"),
)


def partition_families(snapshot: Snapshot) -> list[Metric]:
    families = []
    for name, help_text, attribute in _PARTITION_GAUGES:
        family = GaugeMetricFamily(name, help_text, labels=_PARTITION_LABELS)
        for row in snapshot.partitions:
            family.add_metric([row.topic, str(row.partition)], getattr(row, attribute))
        families.append(family)
    index = GaugeMetricFamily("tslog_index_bytes", "Bytes of index entries on this broker, "
                              "per kind: offset, time (LogAppendTime), create_time.",
                              labels=["kind"])
    for kind, size in snapshot.index_bytes.items():
        index.add_metric([kind], size)
    families.append(index)
    return families


def lag_families(snapshot: Snapshot) -> list[Metric]:
    records = GaugeMetricFamily(
        "tslog_consumer_group_lag_records",
        "High watermark minus the group's committed offset (0 when caught up).",
        labels=_LAG_LABELS)
    seconds = GaugeMetricFamily(
        "tslog_consumer_group_lag_seconds",
        "LogAppendTime of the record below the high watermark minus that of the record at the "
        "group's committed offset (0 when caught up).", labels=_LAG_LABELS)
    for row in snapshot.lags:
        labels = [row.group, row.topic, str(row.partition)]
        records.add_metric(labels, row.records)
        seconds.add_metric(labels, row.seconds)
    return [records, seconds]


def disk_families(data_dir: str) -> list[Metric]:
    try:
        stats = os.statvfs(data_dir)
    except OSError:
        return []
    available = GaugeMetricFamily("tslog_data_dir_available_bytes",
                                  "Bytes an unprivileged user may still write in the data "
                                  "directory's file system.", value=stats.f_bavail * stats.f_frsize)
    capacity = GaugeMetricFamily("tslog_data_dir_capacity_bytes",
                                 "Size of the data directory's file system.",
                                 value=stats.f_blocks * stats.f_frsize)
    return [available, capacity]


class BrokerStateCollector(Collector):
    """Registered while the exposition server runs; asks ``loop`` for a snapshot per scrape."""

    def __init__(self, broker, loop: asyncio.AbstractEventLoop, timeout_s: float = 5.0) -> None:
        self.broker = broker
        self.loop = loop
        self.timeout_s = timeout_s

    def describe(self) -> list[Metric]:
        """Names only, so registering never takes a snapshot (it may run on the loop)."""
        return (partition_families(Snapshot()) + lag_families(Snapshot())
                + disk_families(self.broker.config.data_dir))

    def collect(self) -> Iterator[Metric]:
        snapshot = snapshot_from_thread(self.broker, self.loop, self.timeout_s)
        if snapshot is not None:
            yield from partition_families(snapshot)
            yield from lag_families(snapshot)
        yield from disk_families(self.broker.config.data_dir)
