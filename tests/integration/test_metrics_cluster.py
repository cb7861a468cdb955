"""Replication metrics of a real three-broker cluster (real etcd), as an operator sees them.

A follower of a replication-factor-3 partition is killed: the leader's /metrics shows one
under-replicated partition and an ISR shrink; the follower comes back, catches up and
rejoins: the leader shows none under-replicated and an ISR expansion, and the follower
reports its fetch lag for the partition. Every broker serves its own metrics port.
"""

from __future__ import annotations

import threading
import urllib.request

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port, wait_cluster_ready
from tests.helpers.prometheus import parse_samples
from tests.helpers.replication import bootstrap, create_replicated, wait_for
from tslog.client import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "watched"
LAG = f'tslog_follower_fetch_lag_records{{partition="0",topic="{TOPIC}"}}'


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return parse_samples(response.read().decode())


@pytest.fixture
def metered_cluster(tmp_path, etcd):
    """Three brokers of one cluster, node ids 0-2, each with its own metrics port."""
    ports = [free_port() for _ in range(3)]
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "cluster_name": "tslog",
        "broker_session_timeout_ms": 2000, "metrics_listen": f"127.0.0.1:{ports[node]}"})
        for node in range(3)]
    try:
        for broker in brokers:
            broker.launch()
        wait_cluster_ready(brokers)
        yield brokers, ports
    finally:
        for broker in brokers:
            broker.kill()


def test_isr_shrink_and_rejoin_show_on_metrics(metered_cluster):
    brokers, ports = metered_cluster
    info = create_replicated(brokers, TOPIC, {"replica.lag.time.max.ms": "1500"})
    leader = info.leader
    follower = next(node for node in range(3) if node != leader)
    others = [b for node, b in enumerate(brokers) if node != follower]
    assert scrape(ports[leader])["tslog_under_replicated_partitions"] == 0
    assert scrape(ports[leader])["tslog_leader_elections_total"] >= 1
    shrinks = scrape(ports[leader])["tslog_isr_shrinks_total"]
    expands = scrape(ports[leader])["tslog_isr_expands_total"]

    stop = threading.Event()

    def produce():  # keeps the leader's log moving, so the follower has something to miss
        with Producer(bootstrap(others), acks=1, linger_ms=5) as producer:
            while not stop.is_set():
                producer.send(TOPIC, b"x" * 100).get(30)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        wait_for(lambda: scrape(ports[follower]).get(LAG) is not None, 30,
                 "the follower to report its fetch lag")
        brokers[follower].kill()
        wait_for(lambda: scrape(ports[leader])["tslog_under_replicated_partitions"] == 1, 30,
                 "the leader to count the partition under-replicated")
        assert scrape(ports[leader])["tslog_isr_shrinks_total"] == shrinks + 1
        brokers[follower].start()
        wait_for(lambda: scrape(ports[leader])["tslog_under_replicated_partitions"] == 0, 60,
                 "the follower to rejoin the ISR")
        assert scrape(ports[leader])["tslog_isr_expands_total"] == expands + 1
        wait_for(lambda: scrape(ports[follower]).get(LAG) == 0, 30,
                 "the rejoined follower's fetch lag to be 0")
    finally:
        stop.set()
        writer.join(60)


def test_group_lag_is_reported_once_by_the_partition_leader(metered_cluster):
    """Every broker knows the group's committed offset (etcd), but only the leader, whose
    high watermark is authoritative, reports the lag: one series per partition."""
    brokers, ports = metered_cluster
    info = create_replicated(brokers, TOPIC, {})
    with Producer(bootstrap(brokers), acks="all") as producer:
        for _ in range(10):
            producer.send(TOPIC, b"x" * 10)
        producer.flush()
    with Consumer(bootstrap(brokers), group_id="readers") as consumer:
        consumer.commit({TopicPartition(TOPIC, 0): 4})
    series = f'tslog_consumer_group_lag_records{{group="readers",partition="0",topic="{TOPIC}"}}'
    wait_for(lambda: scrape(ports[info.leader]).get(series) == 6, 30,
             "the leader to report 10 - 4 records of lag")
    for node in range(3):
        if node != info.leader:
            assert series not in scrape(ports[node])
