"""Scrape-time series: partition state, index bytes, consumer groups and their lag, data-dir
space.

Why computed at scrape time and not kept as gauges: these values change with every append
and every commit, but are only needed when Prometheus asks, so keeping gauges current would
put work on the hot path for nothing. A scrape takes one snapshot on the event loop
(``snapshot.py``) and writes it out here, in the exposition thread, in text format.

Labels: ``topic``, ``partition``, ``group`` (all bounded by what exists on the broker),
``kind`` of index and a group's ``state`` (four values); never offsets, client ids or
addresses. ``statvfs`` of the data directory is safe from any thread, so it is read here
directly.
"""

from __future__ import annotations

import os

from ..groups import GroupState
from .snapshot import Snapshot
from .text import header, label_text, number, with_label

_PARTITION_LABELS = ("partition", "topic")
_LAG_LABELS = ("group", "partition", "topic")

# (name, help, PartitionRow field)
_PARTITION_GAUGES = (
    ("tslog_log_start_offset", "First offset still in the partition's log.", "log_start_offset"),
    ("tslog_log_end_offset", "Offset the next appended record will get.", "log_end_offset"),
    ("tslog_high_watermark", "Offset below which records are committed and readable by "
     "consumers.", "high_watermark"),
    ("tslog_log_size_bytes", "Bytes of the partition's segment files.", "size_bytes"),
    ("tslog_log_segments", "Segments in the partition's log.", "segments"),
)
_LAG_GAUGES = (
    ("tslog_consumer_group_lag_records",
     "High watermark minus the group's committed offset (0 when caught up).", "records"),
    ("tslog_consumer_group_lag_seconds",
     "Age of the oldest record the group has not consumed: now minus the LogAppendTime of the "
     "record at its committed offset (0 when caught up); grows while the group stands still.",
     "age_seconds"),
    ("tslog_consumer_group_backlog_span_seconds",
     "LogAppendTime of the record below the high watermark minus that of the record at the "
     "group's committed offset (0 when caught up).", "span_seconds"),
)
# The live states a group can be in (Dead is no group, so no series), as label values.
_GROUP_STATES = tuple(state for state in GroupState if state is not GroupState.DEAD)
_STATE_LABELS = {state: state.name.lower() for state in _GROUP_STATES}


def render_snapshot(snapshot: Snapshot, lines: list[str]) -> None:
    """Partition gauges, index bytes and group lag, in text format, appended to ``lines``."""
    labels = [label_text(_PARTITION_LABELS, (str(row.partition), row.topic))
              for row in snapshot.partitions]
    for name, help_text, field in _PARTITION_GAUGES:
        header(lines, name, help_text, "gauge")
        lines.extend(f"{name}{text} {number(getattr(row, field))}\n"
                     for text, row in zip(labels, snapshot.partitions))
    header(lines, "tslog_index_bytes", "Bytes of index entries on this broker, per kind: "
           "offset, time (LogAppendTime), create_time.", "gauge")
    lines.extend(f'tslog_index_bytes{{kind="{kind}"}} {number(size)}\n'
                 for kind, size in snapshot.index_bytes.items())
    labels = [label_text(_LAG_LABELS, (row.group, str(row.partition), row.topic))
              for row in snapshot.lags]
    for name, help_text, field in _LAG_GAUGES:
        header(lines, name, help_text, "gauge")
        lines.extend(f"{name}{text} {number(getattr(row, field))}\n"
                     for text, row in zip(labels, snapshot.lags))
    render_groups(snapshot, lines)


def render_groups(snapshot: Snapshot, lines: list[str]) -> None:
    """Per consumer group (on its coordinator): state, members, rebalances."""
    groups = [(label_text(("group",), (row.group,)), row) for row in snapshot.groups]
    header(lines, "tslog_consumer_group_state", "1 for the group's current state, 0 for the "
           "others (empty, assigning, reconciling, stable), per group on its coordinator.",
           "gauge")
    for text, row in groups:
        for state in _GROUP_STATES:
            labels = with_label(text, "state", _STATE_LABELS[state])
            lines.append(f"tslog_consumer_group_state{labels} {int(row.state is state)}.0\n")
    header(lines, "tslog_consumer_group_members", "Members of the group now.", "gauge")
    lines.extend(f"tslog_consumer_group_members{text} {number(row.members)}\n"
                 for text, row in groups)
    header(lines, "tslog_consumer_group_rebalances_total", "Times the group epoch moved "
           "(a member joined, left, was removed or changed its subscription, or a subscribed "
           "topic changed), each one a new target assignment: the group epoch.", "counter")
    lines.extend(f"tslog_consumer_group_rebalances_total{text} {number(row.group_epoch)}\n"
                 for text, row in groups)


def render_disk(data_dir: str, lines: list[str]) -> None:
    """Free and total bytes of the data directory's file system (nothing if unreadable)."""
    try:
        stats = os.statvfs(data_dir)
    except OSError:
        return
    header(lines, "tslog_data_dir_available_bytes", "Bytes an unprivileged user may still "
           "write in the data directory's file system.", "gauge")
    lines.append(f"tslog_data_dir_available_bytes {number(stats.f_bavail * stats.f_frsize)}\n")
    header(lines, "tslog_data_dir_capacity_bytes", "Size of the data directory's file system.",
           "gauge")
    lines.append(f"tslog_data_dir_capacity_bytes {number(stats.f_blocks * stats.f_frsize)}\n")
