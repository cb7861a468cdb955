"""The broker's /metrics, as a real Prometheus server and promtool see them.

Goal: an operator's view. A real ``tslog-broker`` serves ``--metrics-listen`` on a loopback
port; a real Prometheus scrapes it every second. We produce batches with real time between
them (so LogAppendTimes differ), consume every record, commit the group at a record in the
middle, and ask Prometheus' HTTP API for ``up``, the produced-record count and the group's lag,
comparing them with what the client itself saw: the backlog span must equal the LAT of the
last record minus the LAT of the record at the committed offset, computed from the records.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request

import pytest

from tests.helpers.broker_process import free_port
from tests.helpers.prometheus import PROMTOOL, PrometheusProcess
from tslog.client import Admin, Consumer, Producer, TopicPartition

pytestmark = pytest.mark.timeout(120)

# Every metric the broker promises (README, "Metrics"), with its type.
AGREED_METRICS = {
    "tslog_requests_total": "counter", "tslog_request_errors_total": "counter",
    "tslog_request_duration_seconds": "histogram",
    "tslog_produced_records_total": "counter", "tslog_produced_bytes_total": "counter",
    "tslog_fetched_records_total": "counter", "tslog_fetched_bytes_total": "counter",
    "tslog_log_start_offset": "gauge", "tslog_log_end_offset": "gauge",
    "tslog_high_watermark": "gauge", "tslog_log_size_bytes": "gauge",
    "tslog_log_segments": "gauge", "tslog_index_bytes": "gauge",
    "tslog_time_lookup_duration_seconds": "histogram",
    "tslog_time_lookup_scanned_bytes": "histogram",
    "tslog_end_to_end_latency_seconds": "histogram",
    "tslog_consumer_group_lag_records": "gauge", "tslog_consumer_group_lag_seconds": "gauge",
    "tslog_consumer_group_backlog_span_seconds": "gauge",
    "tslog_consumer_group_commits_total": "counter", "tslog_consumer_group_state": "gauge",
    "tslog_consumer_group_members": "gauge", "tslog_consumer_group_rebalances_total": "counter",
    "tslog_under_replicated_partitions": "gauge", "tslog_isr_shrinks_total": "counter",
    "tslog_isr_expands_total": "counter", "tslog_leader_elections_total": "counter",
    "tslog_follower_fetch_lag_records": "gauge",
    "tslog_recovery_duration_seconds": "gauge", "tslog_recovery_truncated_bytes": "gauge",
    "tslog_open_connections": "gauge", "tslog_refused_requests_total": "counter",
    "tslog_data_dir_available_bytes": "gauge", "tslog_data_dir_capacity_bytes": "gauge",
}
TOPIC = "lagged"
GROUP = "watchers"
BATCHES = 4
PER_BATCH = 25


@pytest.fixture
def metrics_broker(broker_factory):
    port = free_port()
    process = broker_factory(args=["--metrics-listen", f"127.0.0.1:{port}"])
    process.metrics_url = f"http://127.0.0.1:{port}/metrics"
    process.metrics_target = f"127.0.0.1:{port}"
    return process


@pytest.fixture
def prometheus_factory(tmp_path):
    started: list[PrometheusProcess] = []

    def make(targets: list[str]) -> PrometheusProcess:
        server = PrometheusProcess(tmp_path / f"prometheus-{len(started)}", targets)
        started.append(server)
        return server.start()

    yield make
    for server in started:
        server.stop()


def produce_spread(bootstrap: str) -> None:
    """BATCHES flushed batches, 150 ms apart, so the partition holds distinct LATs."""
    with Admin(bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=1)
    with Producer(bootstrap, acks="all", linger_ms=0) as producer:
        for b in range(BATCHES):
            for i in range(PER_BATCH):
                producer.send(TOPIC, b"batch %d record %d" % (b, i), partition=0)
            producer.flush()
            time.sleep(0.15)


def consume_all(bootstrap: str) -> list:
    tp = TopicPartition(TOPIC, 0)
    records = []
    with Consumer(bootstrap, group_id=GROUP) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + 30
        while len(records) < BATCHES * PER_BATCH and time.monotonic() < deadline:
            records += consumer.poll(timeout_ms=500)
        committed_at = records[PER_BATCH + PER_BATCH // 2].offset  # inside the second batch
        consumer.commit({tp: committed_at})
        assert consumer.committed(tp) == committed_at
    return records, committed_at


def wait_for(prometheus: PrometheusProcess, promql: str, expected: float,
             timeout_s: float = 30.0) -> float:
    """Query until the single result equals ``expected`` (scrapes arrive every second)."""
    deadline = time.monotonic() + timeout_s
    seen = None
    while time.monotonic() < deadline:
        result = prometheus.query(promql)
        if result:
            assert len(result) == 1, result
            seen = result[0][1]
            if seen == pytest.approx(expected, abs=1e-9):
                return seen
        time.sleep(0.25)
    raise AssertionError(f"{promql}: Prometheus has {seen}, expected {expected}")


@pytest.mark.slow
def test_prometheus_scrapes_records_and_lag_in_seconds(metrics_broker, prometheus_factory):
    prometheus = prometheus_factory([metrics_broker.metrics_target])
    produce_spread(metrics_broker.bootstrap)
    records, committed_at = consume_all(metrics_broker.bootstrap)
    assert len(records) == BATCHES * PER_BATCH
    by_offset = {record.offset: record for record in records}
    last = records[-1]
    expected_lag_s = (last.log_append_time - by_offset[committed_at].log_append_time) / 1000
    assert expected_lag_s >= 0.15 * (BATCHES - 2)  # the sleeps show: not trivially 0

    wait_for(prometheus, 'up{job="tslog"}', 1)
    wait_for(prometheus, f'tslog_produced_records_total{{topic="{TOPIC}"}}', len(records))
    selector = f'{{group="{GROUP}",topic="{TOPIC}",partition="0"}}'
    wait_for(prometheus, f"tslog_consumer_group_backlog_span_seconds{selector}", expected_lag_s)
    [(_, age)] = prometheus.query(f"tslog_consumer_group_lag_seconds{selector}")
    assert age >= expected_lag_s  # the oldest unread record is older than the span it opens
    wait_for(prometheus, f"tslog_consumer_group_lag_records{selector}",
             last.offset + 1 - committed_at)
    wait_for(prometheus, f'tslog_high_watermark{{topic="{TOPIC}",partition="0"}}',
             last.offset + 1)
    fetched = prometheus.query(f'tslog_fetched_records_total{{topic="{TOPIC}"}}')
    assert fetched and fetched[0][1] >= len(records)


def test_promtool_accepts_the_exposition(metrics_broker):
    """``promtool check metrics`` (names, types, units, help) on a real scrape taken after
    traffic, so labelled histograms, per-topic and per-group series are all present."""
    produce_spread(metrics_broker.bootstrap)
    consume_all(metrics_broker.bootstrap)
    with Consumer(metrics_broker.bootstrap) as consumer:
        consumer.offsets_for_times({TopicPartition(TOPIC, 0): 0})  # a time lookup
    with urllib.request.urlopen(metrics_broker.metrics_url, timeout=10) as response:
        text = response.read()
    for name, kind in AGREED_METRICS.items():  # the names alert rules and docs rely on
        assert f"# TYPE {name} {kind}\n".encode() in text, name
    for name in ("tslog_time_lookup_duration_seconds_count", "tslog_consumer_group_lag_seconds{",
                 "tslog_end_to_end_latency_seconds_bucket{", "process_cpu_seconds_total"):
        assert name.encode() in text, name
    checked = subprocess.run([PROMTOOL, "check", "metrics"], input=text,
                             capture_output=True, timeout=60)
    assert checked.returncode == 0 and not checked.stdout.strip(), (
        checked.stdout.decode() + checked.stderr.decode())
