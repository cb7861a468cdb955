"""Replication across three real broker processes and a real etcd, on loopback.

What a user notices: a topic with replication factor 3 keeps every acknowledged record when a
follower dies; the follower comes back, catches up and rejoins the ISR; the followers' segment
and index files are the leader's, byte for byte; min.insync.replicas refuses acks=all
writes rather than weakening them.
"""

from __future__ import annotations

import threading
import time

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
from tslog.client import Admin, Producer
from tslog.client.errors import NotEnoughReplicasError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC_CONFIG = {
    "replica.lag.time.max.ms": "1500",
    "segment.bytes": "40000",  # several segments, so rolls must match too
    "index.interval.bytes": "1000",
}


def create(brokers, topic, config=None):
    return create_replicated(brokers, topic, {**TOPIC_CONFIG, **(config or {})})


def test_followers_copy_the_leaders_files_byte_for_byte(cluster_factory):
    brokers = cluster_factory(3)
    info = create(brokers, "copies")
    with Producer(bootstrap(brokers), acks="all", linger_ms=1, batch_size=3000) as producer:
        futures = [producer.send("copies", b"record-%06d" % i, key=b"k%d" % (i % 7))
                   for i in range(5000)]
        producer.flush()
        assert [f.get(30).offset for f in futures] == list(range(5000))
    for broker in brokers:  # acks=all: every ISR member has everything; stop to compare
        broker.terminate()
    leader = brokers[info.leader]
    segments = assert_replica_files_identical(
        leader, [b for b in brokers if b is not leader], "copies-0")
    assert segments >= 3


def test_a_dead_follower_leaves_the_isr_and_rejoins_after_catching_up(cluster_factory):
    brokers = cluster_factory(3)
    info = create(brokers, "shrink")
    follower = next(b for i, b in enumerate(brokers) if i != info.leader)
    others = [b for b in brokers if b is not follower]
    acknowledged = []
    stop = threading.Event()

    def produce():
        with Producer(bootstrap(others), acks="all", linger_ms=2, retries=50,
                      enable_idempotence=True) as producer:
            i = 0
            while not stop.is_set():
                acknowledged.append(producer.send("shrink", b"v%d" % i).get(30).offset)
                i += 1

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        wait_for(lambda: len(acknowledged) > 50, 30, "first writes")
        follower.kill()
        killed_at = time.monotonic()
        shrunk = wait_for(lambda: len((p := describe(bootstrap(others), "shrink")).isr) == 2
                          and p, 30, "the ISR to shrink")
        assert brokers.index(follower) not in shrunk.isr
        assert time.monotonic() - killed_at < 15
        before = len(acknowledged)
        wait_for(lambda: len(acknowledged) > before + 50, 30, "acks=all writes to go on")
        follower.start()
        rejoined = wait_for(lambda: len((p := describe(bootstrap(others), "shrink")).isr) == 3
                            and p, 60, "the follower to rejoin the ISR")
        assert rejoined.leader == info.leader
    finally:
        stop.set()
        writer.join(60)
    records = consume_all(bootstrap(brokers), "shrink", len(acknowledged))
    assert [r.offset for r in records] == acknowledged == list(range(len(acknowledged)))
    for broker in brokers:
        broker.terminate()
    assert_replica_files_identical(brokers[info.leader], [follower], "shrink-0")


def test_min_insync_replicas_refuses_acks_all_but_not_acks_1(cluster_factory):
    brokers = cluster_factory(3)
    info = create(brokers, "strict", {"min.insync.replicas": "3"})
    with Producer(bootstrap(brokers), acks="all") as producer:
        assert producer.send("strict", b"ok").get(30).offset == 0
    follower = next(b for i, b in enumerate(brokers) if i != info.leader)
    follower.kill()
    others = [b for b in brokers if b is not follower]
    wait_for(lambda: len(describe(bootstrap(others), "strict").isr) == 2, 30, "ISR shrink")
    with Producer(bootstrap(others), acks="all", retries=0) as producer:
        with pytest.raises(NotEnoughReplicasError):
            producer.send("strict", b"refused").get(30)
    with Producer(bootstrap(others), acks=1) as producer:
        assert producer.send("strict", b"acks=1 still works").get(30).offset == 1


def test_a_returning_leader_cuts_the_tail_nobody_else_had_and_offsets_never_fork(
        cluster_factory):
    brokers = cluster_factory(3)
    # A long lag allowance: the ISR must still name the followers when the leader dies.
    info = create(brokers, "diverge", {"replica.lag.time.max.ms": "30000"})
    leader = brokers[info.leader]
    followers = [b for b in brokers if b is not leader]
    with Producer(leader.bootstrap, acks="all") as producer:
        for i in range(20):
            producer.send("diverge", b"committed-%d" % i)
        producer.flush()
    for follower in followers:  # gone: they cannot copy what comes next
        follower.kill()
    with Producer(leader.bootstrap, acks=1) as producer:
        assert producer.send("diverge", b"only-on-the-old-leader").get(10).offset == 20
    leader.kill()  # before the ISR could shrink: the followers are still eligible
    for follower in followers:
        follower.start()
    wait_for(lambda: describe(bootstrap(followers), "diverge").leader not in (-1, info.leader),
             30, "a new leader")
    with Producer(bootstrap(followers), acks="all", retries=20) as producer:
        assert producer.send("diverge", b"after-failover").get(30).offset == 20
    leader.start()
    wait_for(lambda: len(describe(bootstrap(brokers), "diverge").isr) == 3, 60,
             "the old leader back in the ISR")
    assert "truncated to 20" in leader.log_text()
    values = [r.value for r in consume_all(bootstrap(brokers), "diverge", 21)]
    assert values == [b"committed-%d" % i for i in range(20)] + [b"after-failover"]
    new_leader = brokers[describe(bootstrap(brokers), "diverge").leader]
    for broker in brokers:
        broker.terminate()
    assert_replica_files_identical(new_leader, [leader], "diverge-0")


def test_a_follower_back_after_retention_passed_it_starts_over_at_the_leaders_log_start(
        cluster_factory):
    brokers = cluster_factory(3, config={"log_retention_check_interval_ms": 200})
    info, follower, start = follower_back_after_retention(brokers, "expired", TOPIC_CONFIG)
    earliest, records = assert_serves_from_log_start_after_rejoining(brokers, "expired",
                                                                     info.leader, follower)
    assert earliest >= start
    assert records[-2].value == b"record-0299" + b"." * 80


def test_a_new_topic_does_not_wait_for_the_followers_long_polls(cluster_factory):
    """Followers long-poll each leader for the partitions they already follow; here a poll
    lasts a minute. A topic created meanwhile must be replicated at once: its first acks=all
    produce is answered by the full ISR, not timed out after 15 s while the followers wait
    out their polls (a minute of lag is allowed, so the ISR cannot shrink around it)."""
    brokers = cluster_factory(3, config={"replica_fetch_wait_max_ms": 60_000})
    patient = {"replica.lag.time.max.ms": "60000"}
    with Admin(bootstrap(brokers)) as admin:
        admin.create_topic("idle", partitions=3, replication_factor=3, config=patient)
    leaders = {wait_for(lambda p=p: (i := describe(bootstrap(brokers), "idle", p)).leader >= 0
                        and i, 30, "a leader").leader for p in range(3)}
    assert leaders == {0, 1, 2}  # so every follower has a poll in flight at every leader
    with Producer(bootstrap(brokers), acks="all", linger_ms=0) as producer:
        producer.send("idle", b"polls start").get(30)  # the polls are running now
    create(brokers, "fresh", patient)
    with Producer(bootstrap(brokers), acks="all", linger_ms=0, retries=0,
                  request_timeout_ms=15_000) as producer:
        assert producer.send("fresh", b"first").get(30).offset == 0
    assert len(describe(bootstrap(brokers), "fresh").isr) == 3
