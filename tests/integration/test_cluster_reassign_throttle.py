"""The catch-up throttle on real brokers: with ``leader_replication_throttled_rate`` set, a
partition of 1 MiB moved to two new brokers is paced by it (the leader holds catch-up reads
back, counted on its metrics, and serves each new replica the whole log), the move's gauge
shows it under way, and the moved replicas' files equal the leader's byte for byte."""

from __future__ import annotations

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tests.helpers.replication import assert_replica_files_identical, bootstrap, wait_for
from tests.integration.test_cluster_reassign import in_sync
from tests.integration.test_metrics_cluster import scrape
from tslog.client import Admin, Producer, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

RATE = 256 * 1024
TOPIC = "moving"


METRICS_PORTS: dict[int, int] = {}


def start(tmp_path, etcd, nodes: range, cluster_size: int) -> list[BrokerProcess]:
    for node in nodes:
        METRICS_PORTS[node] = free_port()
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 4000,
        "metrics_listen": f"127.0.0.1:{METRICS_PORTS[node]}",
        "leader_replication_throttled_rate": RATE}) for node in nodes]
    for broker in brokers:
        broker.launch()
    wait_cluster_ready(brokers, cluster_size)
    return brokers


def test_a_throttled_move_is_paced_and_complete(tmp_path, etcd):
    brokers = start(tmp_path, etcd, range(3), 3)
    try:
        with Admin(bootstrap(brokers)) as admin:
            admin.create_topic(TOPIC, partitions=1, replication_factor=3)
        wait_for(lambda: in_sync(brokers, [0, 1, 2]), 30, "the topic in sync")
        with Producer(bootstrap(brokers), acks="all", linger_ms=5) as producer:
            for future in [producer.send(TOPIC, b"x" * 1024) for _ in range(1024)]:
                future.get(30)
        brokers += start(tmp_path, etcd, range(3, 5), 5)
        leader = in_sync(brokers, [0, 1, 2])[0]
        port = METRICS_PORTS[leader]
        with Admin(bootstrap(brokers)) as admin:
            admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): [2, 3, 4]})
        # 2 MiB to serve at 256 KiB/s: the move lasts seconds, the gauge shows it.
        assert scrape(port)["tslog_reassigning_partitions"] == 1
        wait_for(lambda: in_sync(brokers, [2, 3, 4]), 120, "the throttled move done")
        samples = scrape(port)
        assert samples["tslog_reassignment_throttled_reads_total"] > 0
        log_bytes = sum(p.stat().st_size for p in
                        (brokers[leader].data_dir / f"{TOPIC}-0").glob("*.log"))
        assert samples["tslog_reassignment_catch_up_bytes_total"] >= 2 * log_bytes
        assert samples["tslog_reassigning_partitions"] == 0 or leader not in (2, 3, 4)
        new_leader = in_sync(brokers, [2, 3, 4])[0]
        for broker in brokers:
            broker.terminate()
        assert_replica_files_identical(brokers[new_leader],
                                       [brokers[n] for n in (2, 3, 4) if n != new_leader],
                                       f"{TOPIC}-0")
    finally:
        for broker in brokers:
            broker.kill()
