"""Partition reassignment on five real brokers and etcd, under continuous acks=all produce
and a consumer group reading: a partition moves from brokers {0, 1, 2} to {2, 3, 4} (two of
them added to a running cluster), also while the controller is SIGKILLed mid-move and while
a new replica's broker is SIGKILLed during its catch-up.

After each: every acknowledged record is in the log once at its acknowledged offset with its
LAT, LAT never decreases, time lookups equal a brute-force scan (``tests/faults/checks.py``),
the group's commit is one past a record it read, the moved replicas' segment and index
files equal the leader's byte for byte, and the brokers the partition left hold no log of
it any more.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.faults.checks import GroupReader, Ledger, LeaderMoved, Writer
from tests.helpers.replication import assert_replica_files_identical, bootstrap, wait_for
from tests.helpers.wire import Wire
from tests.integration.test_cluster_brokers import agreed_state, metadata
from tslog.client import Admin, TopicPartition
from tslog.protocol.messages import ApiKey
from tslog.client.errors import (
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    ReassignmentInProgressError,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SESSION_MS = 6000
TOPIC = "moving"
TP = TopicPartition(TOPIC, 0)
TARGET = [2, 3, 4]


def five(cluster_factory):
    """Brokers 0-2 with the topic on all three, then 3 and 4 added (the cluster grows)."""
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    with Admin(bootstrap(brokers)) as admin:
        admin.create_topic(TOPIC, partitions=1, replication_factor=3)
    wait_for(lambda: in_sync(brokers, [0, 1, 2]), 30, "the topic on brokers 0-2, all in sync")
    brokers += cluster_factory(2, session_timeout_ms=SESSION_MS, first_node=3)
    return brokers


def in_sync(brokers, replicas: list[int]):
    """The agreed (leader, epoch, replicas, isr) of partition 0 once its replicas are
    ``replicas`` (in any order: the first placement's starts at a broker picked by the
    topic's name) and all in its ISR."""
    state = agreed_state([b for b in brokers if b.running], TOPIC)
    if state and 0 in state:
        leader, epoch, current, isr = state[0]
        if sorted(current) == sorted(isr) == sorted(replicas) and leader >= 0:
            return state[0]
    return None


class Workload:
    """The fault harness's writer and group reader, and its checks at the end."""

    def __init__(self, brokers) -> None:
        self.brokers = brokers
        self.writer = Writer(bootstrap(brokers), TOPIC)
        self.reader = GroupReader(bootstrap(brokers), TOPIC, "movers")
        self.writer.start()
        self.reader.start()
        wait_for(lambda: len(self.writer.acknowledged()) >= 200, 60, "200 acknowledged")

    def acknowledged_since(self, count: int) -> None:
        start = len(self.writer.acknowledged())
        wait_for(lambda: len(self.writer.acknowledged()) >= start + count, 60,
                 f"{count} more acknowledged")

    def finish_and_check(self, replicas: list[int]) -> int:
        self.writer.finish()
        self.reader.finish()
        acknowledged = self.writer.acknowledged()
        assert len(acknowledged) == len(self.writer.futures), "a send was not acknowledged"
        leader = wait_for(lambda: in_sync(self.brokers, replicas), 60, "the ISR whole")[0]
        ledger = Ledger(TOPIC)
        broker = self.brokers[leader]

        def checked():
            try:
                with Wire(broker.host, broker.port) as wire:
                    return ledger.check(wire, acknowledged)
            except LeaderMoved:
                return None
        read = wait_for(checked, 60, "the checks against the leader")
        committed = self.reader.check()
        assert committed is not None and committed > 0, "the group never committed"
        return read


def assert_moved_files(brokers, replicas: list[int], gone: list[int]) -> None:
    """Stop everything; the replicas' files equal the leader's, the others have none."""
    leader = in_sync(brokers, replicas)[0]
    for broker in brokers:
        if broker.running:
            broker.terminate()
    followers = [brokers[r] for r in replicas if r != leader]
    segments = assert_replica_files_identical(brokers[leader], followers, f"{TOPIC}-0")
    assert segments >= 1
    for node in gone:
        assert not (brokers[node].data_dir / f"{TOPIC}-0").exists(), \
            f"broker {node} still holds the partition it left"


def listed_by(broker) -> list[dict]:
    """The reassignments under way of partition 0 as ``broker`` lists them (native API)."""
    with Wire(broker.host, broker.port) as wire:
        body = wire.request(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                            {"timeout_ms": 5000, "topics": [{"topic": TOPIC,
                                                             "partitions": [0]}]})
    return [p for t in body["topics"] for p in t["partitions"]]


def reassignments(brokers) -> dict:
    with Admin(bootstrap([b for b in brokers if b.running])) as admin:
        return admin.list_partition_reassignments()


def test_a_partition_moves_to_two_new_brokers_under_load(cluster_factory):
    brokers = five(cluster_factory)
    work = Workload(brokers)
    with Admin(bootstrap(brokers)) as admin:
        admin.alter_partition_reassignments({TP: TARGET})
    moved = wait_for(lambda: in_sync(brokers, TARGET), 60, "the partition on brokers 2-4")
    assert list(moved[2]) == TARGET  # in the order asked for: broker 2 is preferred leader
    assert reassignments(brokers) == {}
    wait_for(lambda: not any((brokers[n].data_dir / f"{TOPIC}-0").exists() for n in (0, 1)),
             30, "the logs of the brokers it left deleted")
    work.acknowledged_since(100)  # produce goes on at the partition's new home
    assert work.finish_and_check(TARGET) >= 300
    with Admin(bootstrap(brokers)) as admin:
        with pytest.raises(NoReassignmentInProgressError):
            admin.alter_partition_reassignments({TP: None})
        with pytest.raises(InvalidReplicaAssignmentError, match="not registered"):
            admin.alter_partition_reassignments({TP: [2, 3, 9]})
        with pytest.raises(InvalidReplicaAssignmentError, match="repeated"):
            admin.alter_partition_reassignments({TP: [2, 2, 3]})
    assert_moved_files(brokers, TARGET, gone=[0, 1])


def test_the_new_controller_finishes_a_move_the_killed_one_started(cluster_factory):
    """A new replica's broker is paused, so the move cannot finish before the controller is
    SIGKILLed; the next controller finds it in etcd and completes it. The killed one, back
    afterwards, deletes the replica it no longer holds when it starts."""
    brokers = five(cluster_factory)
    work = Workload(brokers)
    controller = metadata(brokers[3])["controller_id"]
    assert controller in (0, 1, 2)  # one of the first brokers up
    keep = min({0, 1, 2} - {controller})
    target = [keep, 3, 4]  # the move does not need the broker that is killed
    os.kill(brokers[4].process.pid, signal.SIGSTOP)
    try:
        with Admin(bootstrap(brokers[:4])) as admin:
            admin.alter_partition_reassignments({TP: target})
        brokers[controller].kill()
        wait_for(lambda: metadata(brokers[3])["controller_id"] not in (-1, controller),
                 SESSION_MS / 1000 + 15, "a new controller")
        (listed,) = listed_by(brokers[3])  # the paused broker would not answer
        assert listed["adding_replicas"] == [3, 4] and 4 not in listed["isr"]
        assert sorted(listed["removing_replicas"]) == sorted({0, 1, 2} - {keep})
    finally:
        os.kill(brokers[4].process.pid, signal.SIGCONT)
    wait_for(lambda: in_sync(brokers, target), 60, "the move completed by the new controller")
    brokers[controller].start()  # it comes back without the partition
    work.acknowledged_since(100)
    assert work.finish_and_check(target) >= 300
    assert_moved_files(brokers, target, gone=sorted({0, 1, 2} - {keep}))


def test_a_new_replica_killed_during_catch_up_resumes_and_the_move_completes(
        cluster_factory):
    """Broker 4 is stopped (SIGSTOP) before the move starts, so it is surely not caught up
    when it is SIGKILLed; the move waits for it and completes once it is back."""
    brokers = five(cluster_factory)
    work = Workload(brokers)
    os.kill(brokers[4].process.pid, signal.SIGSTOP)
    with Admin(bootstrap(brokers[:4])) as admin:
        admin.alter_partition_reassignments({TP: TARGET})
    brokers[4].kill()
    listed = reassignments(brokers)  # it cannot finish while broker 4 is down
    assert TP in listed and 4 not in listed[TP].isr
    behind = listed[TP].offsets_behind()
    assert behind[4] is None or behind[4] > 0
    work.acknowledged_since(100)
    brokers[4].start()
    wait_for(lambda: in_sync(brokers, TARGET), 60, "the move completed after the restart")
    work.acknowledged_since(100)
    assert work.finish_and_check(TARGET) >= 400
    assert_moved_files(brokers, TARGET, gone=[0, 1])


def test_a_cancelled_move_returns_to_the_original_replicas(cluster_factory):
    brokers = five(cluster_factory)
    os.kill(brokers[4].process.pid, signal.SIGSTOP)  # the move cannot finish on its own
    try:
        with Admin(bootstrap(brokers[:4])) as admin:
            admin.alter_partition_reassignments({TP: TARGET})
            with pytest.raises(ReassignmentInProgressError, match="under way"):
                admin.alter_partition_reassignments({TP: [0, 1, 3]})
            admin.alter_partition_reassignments({TP: None})
    finally:
        os.kill(brokers[4].process.pid, signal.SIGCONT)
    wait_for(lambda: in_sync(brokers, [0, 1, 2]), 60, "back on brokers 0-2")
    assert reassignments(brokers) == {}
    wait_for(lambda: not any((brokers[n].data_dir / f"{TOPIC}-0").exists() for n in (3, 4)),
             30, "the added replicas' logs deleted")
