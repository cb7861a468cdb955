"""A follower killed right after it cut its log comes back consistent (three real brokers).

What a user notices: a follower's truncation (a returning leader cutting the tail nobody else
had) and its reset (a follower back after retention passed it) change the log at once and
leave the unlinks and fsyncs to the broker's I/O worker. A SIGKILL in between must still
reopen to a log the cluster accepts: the follower rejoins the ISR, every consumer reads the
committed records once and in order, and its files end identical to the leader's.
"""

from __future__ import annotations

import pytest

from tests.helpers.replication import (
    assert_replica_files_identical,
    assert_serves_from_log_start_after_rejoining,
    bootstrap,
    consume_all,
    create_replicated,
    describe,
    follower_back_after_retention,
    wait_for,
)
from tslog.client import Producer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC_CONFIG = {"segment.bytes": "40000", "index.interval.bytes": "1000"}


def test_a_returning_leader_killed_right_after_its_cut_recovers_a_consistent_log(
        cluster_factory):
    brokers = cluster_factory(3)
    info = create_replicated(brokers, "cut", {**TOPIC_CONFIG,
                                              "replica.lag.time.max.ms": "30000"})
    leader = brokers[info.leader]
    followers = [b for b in brokers if b is not leader]
    with Producer(leader.bootstrap, acks="all") as producer:
        for i in range(20):
            producer.send("cut", b"committed-%d" % i)
        producer.flush()
    for follower in followers:
        follower.kill()
    with Producer(leader.bootstrap, acks=1) as producer:
        for i in range(5):  # a tail over more than one batch, nobody else has it
            assert producer.send("cut", b"only-here-%d" % i).get(10).offset == 20 + i
    leader.kill()
    for follower in followers:
        follower.start()
    wait_for(lambda: describe(bootstrap(followers), "cut").leader not in (-1, info.leader),
             30, "a new leader")
    with Producer(bootstrap(followers), acks="all", retries=20) as producer:
        assert producer.send("cut", b"after-failover").get(30).offset == 20
    leader.start()
    wait_for(lambda: "truncated to 20" in leader.log_text(), 60, "the old leader's cut")
    leader.kill()  # SIGKILL: the worker's unlinks and checkpoint may not have run
    leader.start()
    wait_for(lambda: len(describe(bootstrap(brokers), "cut").isr) == 3, 60,
             "the old leader back in the ISR")
    with Producer(bootstrap(brokers), acks="all") as producer:
        assert producer.send("cut", b"after-restart").get(30).offset == 21
    values = [r.value for r in consume_all(bootstrap(brokers), "cut", 22)]
    assert values == ([b"committed-%d" % i for i in range(20)]
                      + [b"after-failover", b"after-restart"])
    new_leader = brokers[describe(bootstrap(brokers), "cut").leader]
    for broker in brokers:
        broker.terminate()
    assert_replica_files_identical(new_leader, [leader], "cut-0")
    assert not [p for p in (leader.data_dir / "cut-0").iterdir() if p.name.endswith(".tmp")
                and not p.name.startswith("next-segment")]


def test_a_follower_killed_right_after_starting_over_recovers_a_consistent_log(
        cluster_factory):
    brokers = cluster_factory(3, config={"log_retention_check_interval_ms": 200})
    info, follower, _ = follower_back_after_retention(brokers, "reset")
    follower.kill()  # SIGKILL: the old segments may still be set aside, unlinked or not
    follower.start()
    assert_serves_from_log_start_after_rejoining(brokers, "reset", info.leader, follower)
