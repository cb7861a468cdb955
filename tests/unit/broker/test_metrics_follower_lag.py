"""The follower-lag series: kept while this broker follows a partition, gone once it stops,
and forgetting a partition that never had one costs no call into the metrics library (a
broker's start forgets every partition it leads, ten thousand on a big broker). Counted by
wrapping the library's ``remove``, never timed."""

from __future__ import annotations

from tslog.broker.metrics import replication as replication_metrics
from tslog.broker.metrics.definitions import REGISTRY


def lag_series(topic: str) -> dict[str, float]:
    return {sample.labels["partition"]: sample.value
            for metric in REGISTRY.collect() if metric.name == "tslog_follower_fetch_lag_records"
            for sample in metric.samples if sample.labels["topic"] == topic}


def test_forgetting_partitions_that_never_had_a_series_calls_no_remove(monkeypatch):
    removed = []
    real_remove = replication_metrics.FOLLOWER_FETCH_LAG.remove
    monkeypatch.setattr(replication_metrics.FOLLOWER_FETCH_LAG, "remove",
                        lambda *labels: (removed.append(labels), real_remove(*labels)))
    for partition in range(1_000):
        replication_metrics.forget_follower("never-followed", partition)
    assert removed == []
    replication_metrics.set_follower_fetch_lag("followed", 3, 7)
    assert lag_series("followed") == {"3": 7.0}
    replication_metrics.forget_follower("followed", 3)
    replication_metrics.forget_follower("followed", 3)  # twice: the second finds nothing
    assert removed == [("followed", "3")]
    assert lag_series("followed") == {}
