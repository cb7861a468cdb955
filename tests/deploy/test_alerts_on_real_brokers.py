"""The alerting rules against real brokers under a real Prometheus evaluating
deploy/prometheus/alerts.yml every second. The three brokers of deploy/cluster/ (their TOML
files, with ports, data dirs and the etcd address moved to free loopback ones): SIGKILL one
and the broker-down and under-replicated alerts become active for exactly what is wrong. One
broker with a consumer group left 400 s behind (by LogAppendTime) trips the lag alert.

Active means Prometheus' ``ALERTS`` series in state pending or firing: the rules hold their
alerts for minutes (``for:``) before firing, which alerts-test.yml checks on sample series.
"""

from __future__ import annotations

import pytest

from tslog.client import Admin, Consumer, Producer, TopicPartition

from tests.deploy.deployfiles import DEPLOY
from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tests.helpers.etcd_process import EtcdProcess
from tests.helpers.prometheus import PrometheusProcess
from tests.helpers.replication import bootstrap, describe, wait_for

pytestmark = pytest.mark.slow

ALERTS = DEPLOY / "prometheus" / "alerts.yml"


def active_alerts(prometheus: PrometheusProcess) -> dict[str, set[str]]:
    """{alert name: instances (or groups) it is active for}."""
    active: dict[str, set[str]] = {}
    for labels, _ in prometheus.query("ALERTS"):
        active.setdefault(labels["alertname"], set()).add(
            labels.get("instance") or labels.get("group", ""))
    return active


@pytest.fixture
def stack(tmp_path):
    """etcd, the three deploy/cluster brokers and Prometheus with the alert rules; stopped by
    pid at teardown."""
    started: list = []
    try:
        etcd = EtcdProcess(tmp_path / "etcd").start()
        started.append(etcd)
        brokers, metrics = [], []
        for node in (1, 2, 3):
            port, metrics_port = free_port(), free_port()
            broker = BrokerProcess(
                tmp_path / f"broker-{node}", port=port,
                args=["--config", str(DEPLOY / "cluster" / f"broker-{node}.toml")],
                config={"etcd_endpoints": etcd.endpoint,
                        "advertised_listen": f"127.0.0.1:{port}",
                        "metrics_listen": f"127.0.0.1:{metrics_port}",
                        "broker_session_timeout_ms": 2000})
            brokers.append(broker.launch())
            started.append(broker)
            metrics.append(f"127.0.0.1:{metrics_port}")
        wait_cluster_ready(brokers)
        prometheus = PrometheusProcess(tmp_path / "prometheus", metrics,
                                       rule_files=[ALERTS]).start()
        started.append(prometheus)
        yield brokers, metrics, prometheus
    finally:
        for process in reversed(started):
            if isinstance(process, BrokerProcess):
                process.kill()
            else:
                process.stop()


def test_a_killed_broker_trips_broker_down_and_under_replicated(stack):
    brokers, metrics, prometheus = stack
    with Admin(bootstrap(brokers)) as admin:
        admin.create_topic("events", partitions=3, replication_factor=3)
    assert set(describe(bootstrap(brokers), "events").replicas) == {1, 2, 3}  # the TOMLs' ids
    for partition in range(3):
        wait_for(lambda: len(describe(bootstrap(brokers), "events", partition).isr) == 3, 30,
                 f"a full ISR on partition {partition}")
    wait_for(lambda: len(prometheus.query('up{job="tslog"} == 1')) == 3, 30, "three targets up")
    wait_for(lambda: prometheus.query("tslog_under_replicated_partitions"), 30, "a rule input")
    assert active_alerts(prometheus) == {}

    brokers[2].kill()
    survivors = set(metrics[:2])

    def both_alerts():
        active = active_alerts(prometheus)
        return (active.get("TslogBrokerDown") == {metrics[2]}
                and active.get("TslogUnderReplicatedPartitions") == survivors and active)

    active = wait_for(both_alerts, 60, "broker-down and under-replicated alerts")
    assert set(active) == {"TslogBrokerDown", "TslogUnderReplicatedPartitions"}


@pytest.fixture
def single(tmp_path):
    """One broker (no etcd) with metrics, and Prometheus with the alert rules scraping it."""
    metrics = f"127.0.0.1:{free_port()}"
    broker = BrokerProcess(tmp_path / "broker", config={"metrics_listen": metrics})
    prometheus = None
    try:
        broker.start()
        prometheus = PrometheusProcess(tmp_path / "prometheus", [metrics],
                                       rule_files=[ALERTS]).start()
        yield broker, prometheus
    finally:
        if prometheus is not None:
            prometheus.stop()
        broker.kill()


def test_a_group_400_seconds_behind_trips_the_lag_alert(single):
    broker, prometheus = single
    tp = TopicPartition("events", 0)
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", partitions=1)
    with Producer(broker.bootstrap, acks="all") as producer:
        first = producer.send("events", b"old", partition=0).get(30)
    with Consumer(broker.bootstrap, group_id="billing") as consumer:
        consumer.commit({tp: first.offset})
    # The broker's clock jumps 400 s ahead: LogAppendTime follows, so the committed record is
    # 400 s older than the log end, whatever the wall clock says.
    broker.restart(env={**broker.env, "TSLOG_TEST_CLOCK_OFFSET_MS": "400000"})
    with Producer(broker.bootstrap, acks="all") as producer:
        last = producer.send("events", b"new", partition=0).get(30)
    assert last.log_append_time - first.log_append_time >= 400_000

    wait_for(lambda: active_alerts(prometheus).get("TslogConsumerLagHigh") == {"billing"}, 30,
             "the consumer lag alert")
    [(_, lag)] = prometheus.query('tslog_consumer_group_lag_seconds{group="billing"}')
    # The age of the oldest unread record: at least the 400 s between the two appends.
    assert lag >= (last.log_append_time - first.log_append_time) / 1000
    assert set(active_alerts(prometheus)) == {"TslogConsumerLagHigh"}
