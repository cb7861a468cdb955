"""Consumer groups through the client on three real brokers and etcd: member processes
(``_group_member.py``, which commits after every poll) read a replicated topic while
records are produced with acks=all, and

* the controller's broker, every group's coordinator, is SIGKILLed: the members find the
  next controller through FindCoordinator and carry on as the same members (ids, epochs and
  partitions restored from etcd, no rebalance), reading every acknowledged record;
* one member is SIGKILLed: the others take its partitions once its session times out
  (a short ``group_session_timeout_ms`` on every broker) and re-read only what it had read
  without committing.
"""

from __future__ import annotations

import itertools
from collections import Counter
import threading
import time

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.integration.test_cluster_brokers import FAILOVER_BOUND_S, SESSION_MS, metadata
from tests.helpers.group_members import MemberProcess, last_commits, split_evenly
from tests.integration.test_consumer_groups_cluster import controller_of, wait_for_topic
from tslog.client import Admin, Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

PARTITIONS = 6
GROUP_HEARTBEAT_MS = 1000  # what the coordinator tells members (they cap theirs at 200 ms)


def wait_for(condition, timeout_s: float, what: str) -> float:
    """Poll ``condition`` (a broker may be down: an error counts as not yet); seconds taken."""
    start = time.monotonic()
    last_error = None
    while time.monotonic() - start < timeout_s:
        try:
            if condition():
                return time.monotonic() - start
        except Exception as exc:  # noqa: BLE001 - a SIGKILLed broker refuses connections
            last_error = exc
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s} s: {what} ({last_error!r})")


def start_cluster(cluster_factory, group_session_ms: int) -> tuple[list[BrokerProcess], str]:
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS, config={
        "group_session_timeout_ms": group_session_ms,
        "group_heartbeat_interval_ms": GROUP_HEARTBEAT_MS})
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10,
             "every broker has heard of every registration")
    bootstrap = ",".join(b.bootstrap for b in brokers)
    with Admin(bootstrap) as admin:
        admin.create_topic("events", PARTITIONS, replication_factor=3)
    wait_for_topic(brokers, "events")
    return brokers, bootstrap


class Feeder:
    """Produces ``p-n`` to every partition p, round after round, with acks=all, until
    stopped; remembers which records were acknowledged and at which offset."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.round = 0
        self.acknowledged: dict[tuple[int, int], str] = {}  # (partition, offset) -> value
        self.failed: list[Exception] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with Producer(self.bootstrap, acks="all") as producer:
            for n in itertools.count():
                if self._stop.wait(0.05):
                    break
                sent = [(f"{p}-{n}", producer.send("events", f"{p}-{n}".encode(), partition=p))
                        for p in range(PARTITIONS)]
                for value, future in sent:
                    try:
                        meta = future.get(60)
                    except Exception as exc:  # noqa: BLE001 - not acknowledged: not expected
                        self.failed.append(exc)
                        continue
                    self.acknowledged[(meta.partition, meta.offset)] = value
                self.round = n + 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)
        assert not self._thread.is_alive()


def read(group: list[MemberProcess]) -> dict[tuple[int, int], str]:
    return {(p, offset): value for m in group for p, offset, value in m.records()}


def describe(bootstrap: str) -> dict[str, tuple[int, set]]:
    with Admin(bootstrap) as admin:
        group = admin.describe_consumer_groups(["readers"])["readers"]
    assert group.state == "STABLE", group
    return {m.member_id: (m.member_epoch, {(tp.topic, tp.partition) for tp in m.assigned})
            for m in group.members}


def test_members_ride_out_the_coordinators_broker_being_killed(cluster_factory, members):
    # The session timeout only has to cover the members' silence on the new coordinator,
    # whose members' sessions start afresh: 10 s leaves room for a busy machine.
    brokers, bootstrap = start_cluster(cluster_factory, group_session_ms=10_000)
    feeder = Feeder(bootstrap)
    group = [members(bootstrap, "readers", "events") for _ in range(3)]
    wait_for(lambda: split_evenly(group, "events", PARTITIONS, 2), 60, "2 partitions each")
    wait_for(lambda: all(len(m.records()) >= 10 for m in group), 30, "every member reads")
    before = describe(bootstrap)
    owned = [m.owned() for m in group]
    assert sorted(len(a) for _, a in before.values()) == [2, 2, 2]
    assert sorted(map(sorted, (a for _, a in before.values()))) == sorted(map(sorted, owned))
    events_before = [len(m.events) for m in group]

    controller = controller_of(brokers)
    controller.kill()
    killed_round = feeder.round
    survivors = [b for b in brokers if b is not controller]
    wait_for(lambda: metadata(survivors[0])["controller_id"] in {b.node_id for b in survivors},
             FAILOVER_BOUND_S, "a new controller")

    # Every partition is read past what was produced when the coordinator died.
    def read_on() -> bool:
        newest: dict[int, int] = {}
        for p, _, value in (r for m in group for r in m.records()):
            newest[p] = max(newest.get(p, -1), int(value.split("-")[1]))
        return len(newest) == PARTITIONS and min(newest.values()) >= killed_round + 20
    wait_for(read_on, 90, "every partition read on after the failover")
    feeder.stop()
    acknowledged = feeder.acknowledged
    wait_for(lambda: read(group).items() >= acknowledged.items(), 60,
             "every acknowledged record read")

    # The same members (ids and epochs) with the same partitions, and no listener call:
    # the members only changed the broker they talk to.
    assert describe(bootstrap) == before
    for member, had, count in zip(group, owned, events_before):
        assert member.owned() == had
        assert [e["event"] for e in member.events[count:]] == ["records"] * (
            len(member.events) - count)
    for member in group:
        member.stop()  # a clean close: commits and leaves through the new coordinator
    with Consumer(bootstrap, group_id="readers") as reader:
        ends = reader.end_offsets([TopicPartition("events", p) for p in range(PARTITIONS)])
        committed = {tp.partition: reader.committed(tp) for tp in ends}
    assert committed == {tp.partition: end for tp, end in ends.items()}

    # Observed: each member keeps its position through the failover (its partitions never
    # move), so every offset of every partition is read exactly once. That is stronger than
    # the guarantee (at-least-once, re-reads only after the last acknowledged commit).
    reads = Counter((p, o) for m in group for p, o, _ in m.records())
    assert max(reads.values()) == 1
    assert Counter(p for p, _ in reads) == {tp.partition: end for tp, end in ends.items()}


def test_a_killed_members_partitions_are_taken_over_on_the_cluster(cluster_factory, members):
    session_ms = 3000
    brokers, bootstrap = start_cluster(cluster_factory, group_session_ms=session_ms)
    feeder = Feeder(bootstrap)
    group = [members(bootstrap, "readers", "events") for _ in range(3)]
    wait_for(lambda: split_evenly(group, "events", PARTITIONS, 2), 60, "2 partitions each")
    victim, survivors = group[0], group[1:]
    wait_for(lambda: len(victim.records()) > 20, 30, "the victim reads")
    victim_owned = victim.owned()
    victim.kill()
    killed_at = time.monotonic()
    read_before = {id(m): len(m.records()) for m in survivors}
    with Consumer(bootstrap, group_id="readers") as reader:
        committed = {p: reader.committed(TopicPartition(t, p)) for t, p in victim_owned}
    wait_for(lambda: split_evenly(survivors, "events", PARTITIONS, 3), 60,
             "the survivors take the victim's partitions")
    took_s = time.monotonic() - killed_at
    # session timeout + one heartbeat interval, + slack for two busy cores
    assert took_s < (session_ms + GROUP_HEARTBEAT_MS) / 1000 + 3
    wait_for(lambda: all(len(m.records()) > read_before[id(m)] for m in survivors), 30,
             "the survivors read on")
    feeder.stop()
    acknowledged = feeder.acknowledged
    # The member reports a poll's records before it commits them, so what the victim
    # committed it reported, and what it did not commit the survivors read.
    wait_for(lambda: read(group).items() >= acknowledged.items(), 60,
             "every acknowledged record read")
    for member in survivors:
        member.stop()

    # The survivors start the victim's partitions at its last commit: what is read twice
    # is the victim's uncommitted tail, and only that.
    last = last_commits(victim, survivors, read_before, committed)
    by_partition: dict[int, list[tuple[int, MemberProcess]]] = {}
    for member in group:
        for p, offset, _ in member.records():
            by_partition.setdefault(p, []).append((offset, member))
    for p, reads in by_partition.items():
        offsets = [o for o, _ in reads]
        twice = {o for o in offsets if offsets.count(o) > 1}
        assert twice == {o for o, m in reads if m is victim and o >= last.get(p, 1 << 62)}
