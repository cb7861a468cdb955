"""Replication metrics, and the calls the replication code makes to keep them.

Why functions and not the metric objects: the replication code should say what happened
(``isr_shrunk()``), not how it is counted, so names and labels stay in this package. All of
them are cheap (a lock and an add), safe from any thread, and called on state changes or once
per follower fetch round, never per record. A single-node broker calls none of them but
``forget_follower`` (at start, for each partition it leads: a set lookup, nothing more): the
counters stay 0, the gauge of under-replicated partitions 0, and
``tslog_follower_fetch_lag_records`` has no series, which is the truth for a broker with no
followers.

    from tslog.broker.metrics import replication as replication_metrics
    replication_metrics.set_under_replicated(count, reassigning)  # after ISR/assignment changes
    replication_metrics.isr_shrunk(); replication_metrics.isr_expanded()
    replication_metrics.leader_elected()                  # this broker became a leader
    replication_metrics.catch_up_served(size); replication_metrics.catch_up_throttled()
    replication_metrics.set_follower_fetch_lag(topic, partition, records)
    replication_metrics.forget_follower(topic, partition) # stopped following it
"""

from __future__ import annotations

import threading

from prometheus_client import Counter, Gauge

from .definitions import REGISTRY

UNDER_REPLICATED_PARTITIONS = Gauge(
    "tslog_under_replicated_partitions",
    "Partitions this broker leads whose ISR is smaller than their replica set (replicas a "
    "reassignment adds not counted, as Kafka's KIP-352).",
    registry=REGISTRY)
REASSIGNING_PARTITIONS = Gauge(
    "tslog_reassigning_partitions",
    "Partitions this broker leads with a reassignment under way (0 once every move is done).",
    registry=REGISTRY)
ISR_SHRINKS = Counter("tslog_isr_shrinks_total",
                      "ISR shrinks of partitions this broker leads (its own proposals or the "
                      "controller removing a dead broker).",
                      registry=REGISTRY)
ISR_EXPANDS = Counter("tslog_isr_expands_total",
                      "ISR expansions of partitions this broker leads (followers back in sync).",
                      registry=REGISTRY)
LEADER_ELECTIONS = Counter("tslog_leader_elections_total",
                           "Times this broker became the leader of a partition.",
                           registry=REGISTRY)
CATCH_UP_BYTES = Counter(
    "tslog_reassignment_catch_up_bytes_total",
    "Bytes this broker, as leader, served to replicas a reassignment is adding before they "
    "joined the ISR (the traffic leader_replication_throttled_rate limits).",
    registry=REGISTRY)
CATCH_UP_THROTTLED = Counter(
    "tslog_reassignment_throttled_reads_total",
    "Catch-up reads this broker answered with no data because the catch-up bytes were over "
    "leader_replication_throttled_rate.",
    registry=REGISTRY)
FOLLOWER_FETCH_LAG = Gauge(
    "tslog_follower_fetch_lag_records",
    "On a follower: the leader's high watermark minus this replica's log end offset after "
    "the last fetch (0 while in the ISR; positive while catching up).", ["topic", "partition"],
    registry=REGISTRY)
# The (topic, partition) keys FOLLOWER_FETCH_LAG has a series for, so that forgetting one it
# never had is a set lookup and not the library's remove (a lock and a KeyError).
_lag_series: set[tuple[str, int]] = set()
_lag_guard = threading.Lock()


def set_under_replicated(count: int, reassigning: int) -> None:
    UNDER_REPLICATED_PARTITIONS.set(count)
    REASSIGNING_PARTITIONS.set(reassigning)


def isr_shrunk() -> None:
    ISR_SHRINKS.inc()


def isr_expanded() -> None:
    ISR_EXPANDS.inc()


def leader_elected() -> None:
    LEADER_ELECTIONS.inc()


def catch_up_served(size: int) -> None:
    CATCH_UP_BYTES.inc(size)


def catch_up_throttled() -> None:
    CATCH_UP_THROTTLED.inc()


def set_follower_fetch_lag(topic: str, partition: int, records: int) -> None:
    with _lag_guard:
        FOLLOWER_FETCH_LAG.labels(topic, str(partition)).set(max(0, records))
        _lag_series.add((topic, partition))


def forget_follower(topic: str, partition: int) -> None:
    """Drop the series of a partition this broker no longer follows (led, moved, deleted).
    A partition that never had one costs a set lookup: a start calls this for every
    partition it leads, ten thousand on a big broker."""
    key = (topic, partition)
    if key not in _lag_series:
        return
    with _lag_guard:
        if key in _lag_series:
            _lag_series.discard(key)
            FOLLOWER_FETCH_LAG.remove(topic, str(partition))
