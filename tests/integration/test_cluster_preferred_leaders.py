"""Preferred leaders on three real brokers and etcd: after a failover, leadership returns to
each partition's first replica once that broker is back in the ISR (the default), or stays
where it is with ``auto_leader_rebalance_enable = false`` until ``tslog partitions
elect-leaders`` (ElectLeaders) asks for it. Records acknowledged before, during and after
are all there, once."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.replication import bootstrap, consume_all, wait_for
from tests.integration.test_cluster_brokers import agreed_state
from tslog.client import Admin, Producer, TopicPartition
from tslog.client.errors import ElectionNotNeededError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "led"


def leaders(brokers) -> dict[int, tuple[int, int, list[int]]]:
    """Partition -> (leader, epoch, isr) once every running broker agrees and every
    partition has all its replicas in its ISR."""
    state = agreed_state([b for b in brokers if b.running], TOPIC)
    if state and all(len(isr) == len(replicas) and leader >= 0
                     for leader, _, replicas, isr in state.values()):
        return {p: (leader, epoch, replicas) for p, (leader, epoch, replicas, _) in
                state.items()}
    return None


def produce(brokers, values: list[bytes]) -> None:
    with Producer(bootstrap([b for b in brokers if b.running]), acks="all",
                  enable_idempotence=True) as producer:
        for future in [producer.send(TOPIC, v, partition=0) for v in values]:
            future.get(30)


def fail_over_preferred(brokers) -> tuple[int, int]:
    """Stop partition 0's preferred leader, produce, start it again; return its id and the
    epoch it led in."""
    with Admin(bootstrap(brokers)) as admin:
        admin.create_topic(TOPIC, partitions=3, replication_factor=3)
    before = wait_for(lambda: leaders(brokers), 30, "3 partitions in sync")
    preferred, epoch, replicas = before[0]
    assert preferred == replicas[0]
    produce(brokers, [b"before"])
    brokers[preferred].terminate()
    wait_for(lambda: (agreed_state([b for b in brokers if b.running], TOPIC) or {}).get(
        0, (preferred,))[0] not in (preferred, -1), 30, "another leader")
    produce(brokers, [b"during"])
    brokers[preferred].start()
    return preferred, epoch


def test_leadership_returns_to_the_preferred_replica_after_a_restart(cluster_factory):
    brokers = cluster_factory(3)
    preferred, epoch = fail_over_preferred(brokers)
    back = wait_for(lambda: (s := leaders(brokers)) and s[0][0] == preferred and s, 60,
                    "broker back as leader of partition 0")
    assert back[0][1] == epoch + 2  # the failover, then the return
    assert {leader for leader, _, _ in back.values()} == {0, 1, 2}  # each leads its share
    produce(brokers, [b"after"])
    values = [r.value for r in consume_all(bootstrap(brokers), TOPIC, 3) if r.partition == 0]
    assert values == [b"before", b"during", b"after"]


def test_with_auto_rebalance_off_leadership_returns_only_when_asked(cluster_factory):
    brokers = cluster_factory(3, config={"auto_leader_rebalance_enable": False})
    preferred, _ = fail_over_preferred(brokers)
    settled = wait_for(lambda: leaders(brokers), 60, "the restarted broker back in the ISR")
    assert settled[0][0] != preferred
    with Admin(bootstrap(brokers)) as admin:  # the API: a single partition
        results = admin.elect_leaders([TopicPartition(TOPIC, 1)])
        assert list(results) == [TopicPartition(TOPIC, 1)]
        if settled[1][0] == settled[1][2][0]:
            assert isinstance(results[TopicPartition(TOPIC, 1)], ElectionNotNeededError)
    command = [sys.executable, "-m", "tslog.client.cli", "partitions", "elect-leaders",
               "--bootstrap", bootstrap(brokers)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("preferred leaders elected for ")
    after = wait_for(lambda: (s := leaders(brokers)) and s[0][0] == preferred and s, 30,
                     "the preferred leader elected")
    assert all(leader == replicas[0] for leader, _, replicas in after.values())
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.stdout == "preferred leaders elected for 0 partitions\n", again.stdout
    produce(brokers, [b"after"])
    values = [r.value for r in consume_all(bootstrap(brokers), TOPIC, 3) if r.partition == 0]
    assert values == [b"before", b"during", b"after"]
