"""The client's side of failover (KIP-320), against three brokers and etcd on hosts of their own.

A leader cut off from etcd only keeps answering Metadata from its stale copy, naming itself
leader, and refuses produces with NOT_LEADER_OR_FOLLOWER once its lease is in doubt
(docs/replication.md, fault model). A Producer that knows only that broker must still find
the new leader while the cut lasts: it asks another broker after the refusal, and never
takes a stale broker's older leader epoch over the newer one it has learned.

Nothing is timed: the cut is healed only after the checks, and each wait is a bound on how
long a broken client may hang the test. The session is 3 s so a lease ends soon. Last, the
connection setup timeout (``connect_timeout_ms``) against a broker whose packets are dropped.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.faults import net
from tests.faults.cluster import FaultCluster, wait_until
from tslog.client import Admin, Producer, TopicPartition
from tslog.client._cluster import Cluster
from tslog.client.errors import ConnectionLostError
from tslog.protocol.batch_header import parse_header
from tslog.protocol.messages import ApiKey

pytestmark = [pytest.mark.faults, pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(net.available() is not None, reason=str(net.available()))]

TOPIC = "client-failover"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    started = FaultCluster(tmp_path_factory.mktemp("client-failover"),
                           config={"broker_session_timeout_ms": 3000})
    try:
        started.start()
        with Admin(started.bootstrap) as admin:
            admin.create_topic(TOPIC, partitions=1, replication_factor=3)
        yield started
    finally:
        started.close()


def full_isr(cluster: FaultCluster):
    return wait_until(lambda: (p := cluster.describe(TOPIC)).leader >= 0
                      and len(p.isr) == len(cluster.brokers) and p, 120, "a full ISR")


def cut_leader_from_etcd(cluster: FaultCluster):
    """Cut the leader from etcd; (the partition before, after the election)."""
    before = full_isr(cluster)
    cluster.net.cut(cluster.name(before.leader), "etcd")
    after = wait_until(lambda: (p := cluster.describe(TOPIC)).leader_epoch
                       > before.leader_epoch and p, 60, "a new leader")
    return before, after


def stale_answer(cluster: FaultCluster, node: int):
    """What ``node`` itself says of the partition (its own copy of the metadata)."""
    with cluster.wire(node) as wire:
        body = wire.request(ApiKey.METADATA, {"topics": [TOPIC]})
    return body["topics"][0]["partitions"][0]


def batch_epoch(cluster: FaultCluster, node: int, offset: int) -> int:
    """The leader epoch stamped on the batch holding ``offset``, as ``node`` stores it."""
    with cluster.wire(node) as wire:
        answer = wire.fetch(TOPIC, 0, offset)
    records, position = answer["records"], 0
    while True:
        header = parse_header(records, position)
        if header.base_offset + header.last_offset_delta >= offset:
            return header.leader_epoch
        position += header.batch_length  # the header's own 80 bytes included


def test_a_producer_knowing_only_a_leader_cut_from_etcd_gets_acks_from_the_new_one(cluster):
    old = full_isr(cluster)
    only_the_leader = cluster.brokers[old.leader].bootstrap
    with Producer(only_the_leader, acks="all", linger_ms=0, request_timeout_ms=2000) as producer:
        producer.send(TOPIC, b"before").get(30)
        try:
            before, after = cut_leader_from_etcd(cluster)
            assert before.leader == old.leader and after.leader != old.leader
            # Precondition: the cut leader still names itself leader at the old epoch.
            stale = stale_answer(cluster, old.leader)
            assert (stale["leader"], stale["leader_epoch"]) == (old.leader, old.leader_epoch)
            # Sent after the election, so no lease of the old leader covers it; acknowledged
            # while the cut lasts (it heals only in the finally below).
            acknowledged = [producer.send(TOPIC, b"after %d" % i).get(60) for i in range(3)]
        finally:
            cluster.net.heal()
    epochs = {batch_epoch(cluster, after.leader, m.offset) for m in acknowledged}
    assert epochs == {after.leader_epoch}


def test_metadata_from_a_stale_broker_never_replaces_a_newer_leader_epoch(cluster):
    async def run(good: int, stale: int) -> tuple:
        view = Cluster(cluster.brokers[good].bootstrap, retries=1, request_timeout_ms=2000)
        stale_address = (cluster.brokers[stale].host, cluster.brokers[stale].port)
        try:
            await view.refresh_metadata()
            learned = view.topics[TOPIC][0]
            # The live brokers' metadata leaves the cut one out: give its address as a
            # bootstrap one, and make every other broker suspect so it is asked first.
            view.bootstrap.append(stale_address)
            for node in view.brokers:
                view.suspect(node)
            await view.refresh_metadata()
            asked_stale = stale_address in view.suspects
            return learned, view.topics[TOPIC][0], view.leader_for(TP), asked_stale
        finally:
            await view.close()

    try:
        before, after = cut_leader_from_etcd(cluster)
        stale = stale_answer(cluster, before.leader)
        assert stale["leader_epoch"] < after.leader_epoch  # the stale broker really is stale
        learned, kept, leader, asked_stale = asyncio.run(run(after.leader, before.leader))
    finally:
        cluster.net.heal()
    # A second election may follow the awaited one before the client asks (on a loaded
    # machine a broker can miss its session): what must hold is that the stale broker's
    # older epoch never replaces the newest one the client has seen.
    assert learned.leader_epoch >= after.leader_epoch > stale["leader_epoch"]
    assert kept.leader_epoch >= learned.leader_epoch
    assert leader == kept.leader
    assert asked_stale  # its answer was read, found older and the broker made suspect


def test_a_connect_to_a_broker_whose_packets_are_dropped_gives_up_and_another_is_asked(cluster):
    isolated = next(node for node in range(len(cluster.brokers))
                    if node != full_isr(cluster).leader)
    alone = cluster.brokers[isolated].bootstrap
    cluster.net.isolate(cluster.name(isolated))
    try:
        with pytest.raises(ConnectionLostError) as refused:
            Admin(alone, connect_timeout_ms=500, retries=0)
        assert "TimeoutError" in str(refused.value)  # gave up on the silent connect itself
        # The isolated broker among its bootstrap addresses: the producer still gets acks.
        with Producer(f"{alone},{cluster.bootstrap}", connect_timeout_ms=500,
                      linger_ms=0) as producer:
            acknowledged = [producer.send(TOPIC, b"around %d" % i).get(60) for i in range(3)]
    finally:
        cluster.net.heal()
    assert len({m.offset for m in acknowledged}) == 3
