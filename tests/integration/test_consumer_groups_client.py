"""Consumer groups through the client, against a real broker: members in separate processes
(``_group_member.py``) share a topic's partitions, take over a killed member's partitions,
make room for a new member without stopping the others, and read every record at least once.

Members cap their heartbeat interval (``heartbeat_interval_ms``) so rebalances take well under
a second; the broker's session timeout is shortened through ``group_session_timeout_ms`` where
the broker has that setting (an unknown ``TSLOG_*`` variable is ignored), else its default
applies and the kill test waits for it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import fields

import pytest

from tests.helpers.group_members import (HEARTBEAT_MS, MemberProcess, last_commits,
                                         split_evenly)
from tests.helpers.replication import wait_for
from tests.helpers.wire import Wire
from tslog.broker.config import BrokerConfig
from tslog.client import Admin, Consumer, ConsumerRebalanceListener, Producer, TopicPartition
from tslog.client.errors import UnknownMemberIdError
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(180)

SESSION_MS = (3000 if "group_session_timeout_ms" in {f.name for f in fields(BrokerConfig)}
              else 45_000)
GROUP_ENV = {"TSLOG_GROUP_SESSION_TIMEOUT_MS": "3000",
             "TSLOG_GROUP_HEARTBEAT_INTERVAL_MS": "1000"}


@pytest.fixture
def group_broker(broker_factory):
    return broker_factory(env=GROUP_ENV)


def topic_with(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    with Admin(bootstrap) as admin:
        admin.create_topic(topic, partitions)
    produce(bootstrap, topic, partitions, range(per_partition))


def produce(bootstrap: str, topic: str, partitions: int, numbers) -> None:
    with Producer(bootstrap) as producer:
        for n in numbers:
            for p in range(partitions):
                producer.send(topic, f"{p}-{n}".encode(), partition=p)
        producer.flush()


@pytest.mark.slow
def test_three_members_share_six_partitions_and_a_new_one_takes_some_without_stopping_the_rest(
        group_broker, members):
    bootstrap = group_broker.bootstrap
    topic_with(bootstrap, "events", 6, 20)
    group = [members(bootstrap, "readers", "events") for _ in range(3)]
    wait_for(lambda: split_evenly(group, "events", 6, 2), 30, "2 partitions each")
    owned = [m.owned() for m in group]
    assert not (owned[0] & owned[1] or owned[1] & owned[2] or owned[0] & owned[2])
    wait_for(lambda: sum(len(m.records()) for m in group) >= 120, 30, "every record read")

    # Each member read exactly the records of the partitions its listener was told it has.
    for member in group:
        read = {(("events", p), value) for p, _, value in member.records()}
        assert {tp for tp, _ in read} <= {tuple(p) for e in member.events_of("assigned")
                                          for p in e}

    # A member leaving: its partitions go to the others, who keep theirs (sticky).
    before = [m.owned() for m in group]
    revokes = [len(m.events_of("revoked")) for m in group]
    leaver = group[2]
    leaver.stop()
    assert group[2].events_of("revoked")[-1] == before[2]  # close() told its listener
    wait_for(lambda: split_evenly(group[:2], "events", 6, 3), 30, "3 partitions each")
    for old, count, member in zip(before, revokes, group[:2]):
        assert old <= member.owned()  # nothing moved away from the members that stayed
        assert len(member.events_of("revoked")) == count

    # A new member joins while records flow: it takes partitions from the others; each of
    # the others keeps reading the partitions it keeps during the rebalance.
    newcomer = members(bootstrap, "readers", "events")
    kept_before = [len(m.records()) for m in group[:2]]
    revokes = [len(m.events_of("revoked")) for m in group[:2]]
    produce(bootstrap, "events", 6, range(20, 40))
    group = [group[0], group[1], newcomer]
    wait_for(lambda: split_evenly(group, "events", 6, 2), 30, "2 partitions each again")
    for count, member in zip(revokes, group[:2]):
        revoked = set().union(*member.events_of("revoked")[count:])
        assert len(revoked) == 1 and revoked.isdisjoint(member.owned())
    wait_for(lambda: sum(len(m.records()) for m in group[:2]) > sum(kept_before), 30,
             "the others read on")
    produce(bootstrap, "events", 6, range(40, 50))
    expected = {f"{p}-{n}" for p in range(6) for n in range(50)}
    everyone = [*group, leaver]
    wait_for(lambda: {r[2] for m in everyone for r in m.records()} >= expected, 30,
             "every record read")
    for member in group:
        member.stop()
    # The partitions a member kept through the rebalance, it read on alone.
    for member in group[:2]:
        kept = {p for _, p in member.owned()}
        later = {v for p, _, v in member.records() if p in kept and int(v.split("-")[1]) >= 20}
        assert later == {f"{p}-{n}" for p in kept for n in range(20, 50)}
    # Commits after every poll and clean leaves: no record was read twice.
    values = [r[2] for m in everyone for r in m.records()]
    assert len(values) == len(set(values)) == len(expected)


@pytest.mark.slow
def test_a_killed_members_partitions_are_taken_over_and_only_its_uncommitted_tail_is_reread(
        group_broker, members):
    bootstrap = group_broker.bootstrap
    topic_with(bootstrap, "events", 6, 10)
    group = [members(bootstrap, "readers", "events") for _ in range(3)]
    wait_for(lambda: split_evenly(group, "events", 6, 2), 30, "2 partitions each")
    stop = threading.Event()
    feeder = threading.Thread(target=lambda: [produce(bootstrap, "events", 6, range(n, n + 5))
                                              for n in range(10, 10_000, 5)
                                              if not stop.wait(0.05)], daemon=True)
    feeder.start()
    victim, survivors = group[0], group[1:]
    wait_for(lambda: len(victim.records()) > 20, 30, "the victim reads")
    victim_owned = victim.owned()
    victim.kill()
    killed_at = time.monotonic()
    read_before = {id(m): len(m.records()) for m in survivors}
    with Consumer(bootstrap, group_id="readers") as reader:
        committed = {(t, p): reader.committed(TopicPartition(t, p)) for t, p in victim_owned}
    wait_for(lambda: split_evenly(survivors, "events", 6, 3), SESSION_MS / 1000 + 30,
             "the survivors take the victim's partitions")
    took_s = time.monotonic() - killed_at
    assert took_s < SESSION_MS / 1000 + 1 + 2  # session timeout + one heartbeat + slack
    stop.set()
    feeder.join(30)
    with Consumer(bootstrap) as reader:
        ends = reader.end_offsets([TopicPartition("events", p) for p in range(6)])
    expected = {f"{tp.partition}-{n}" for tp, end in ends.items() for n in range(end)}
    wait_for(lambda: {r[2] for m in group for r in m.records()} >= expected, 30,
             "every produced record read")
    for member in survivors:
        member.stop()
    # Survivors start the victim's partitions exactly at its last commit: what is read
    # twice is the victim's uncommitted tail, and only that.
    last = last_commits(victim, survivors, read_before,
                        {p: offset for (_, p), offset in committed.items()})
    by_partition: dict[int, list[tuple[int, MemberProcess]]] = {}
    for member in group:
        for p, offset, _ in member.records():
            by_partition.setdefault(p, []).append((offset, member))
    for p, reads in by_partition.items():
        offsets = [o for o, _ in reads]
        twice = {o for o in offsets if offsets.count(o) > 1}
        assert twice == {o for o, m in reads if m is victim and o >= last.get(p, 1 << 62)}


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set]] = []

    def on_partitions_assigned(self, assigned) -> None:
        self.calls.append(("assigned", assigned))

    def on_partitions_revoked(self, revoked) -> None:
        self.calls.append(("revoked", revoked))

    def on_partitions_lost(self, lost) -> None:
        self.calls.append(("lost", lost))


def poll_until(consumers, condition, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        for consumer in consumers:
            consumer.poll(50)


def test_listener_calls_and_commits_with_the_member_epoch(broker, caplog):
    caplog.set_level(logging.DEBUG, logger="tslog")  # a failure shows the heartbeat history
    topic_with(broker.bootstrap, "events", 4, 5)
    tps = {TopicPartition("events", p) for p in range(4)}
    first, second = Recorder(), Recorder()
    options = dict(group_id="g", auto_offset_reset="earliest", heartbeat_interval_ms=HEARTBEAT_MS,
                   auto_commit_interval_ms=0)
    with Consumer(broker.bootstrap, **options) as a:
        a.subscribe(["events"], listener=first)
        records = []
        # No consumer for poll_until to poll: its own poll's records would be thrown away
        # (the test timed out so, with all 20 read and committed), so the condition polls.
        poll_until([], lambda: len(records.extend(a.poll(50)) or records) >= 20, 60.0)
        assert sorted(r.value for r in records) == sorted(
            f"{p}-{n}".encode() for p in range(4) for n in range(5))  # each once
        assert first.calls == [("assigned", tps)] and a.assignment() == tps
        with Consumer(broker.bootstrap, **options) as b:
            b.subscribe(pattern="ev.*", listener=second)
            poll_until([a, b], lambda: len(a.assignment()) == len(b.assignment()) == 2)
            assert first.calls[1][0] == "revoked" and first.calls[1][1] == b.assignment()
            assert second.calls == [("assigned", b.assignment())]
            # a auto-committed the revoked partitions' positions before giving them up;
            # b starts from them (nothing new was produced: it reads nothing).
            assert {b.committed(tp) for tp in b.assignment()} == {5}
            assert {b.position(tp) for tp in b.assignment()} == {5}
            a.commit({tp: 3 for tp in a.assignment()})  # a member commits with its epoch
            assert {a.committed(tp) for tp in a.assignment()} == {3}
        # b closed: it gave its partitions up (listener), left, and a gets them back
        assert second.calls[-1] == ("revoked", tps - a.assignment())
        poll_until([a], lambda: a.assignment() == tps)
        assert first.calls[-1][0] == "assigned"
    assert first.calls[-1] == ("revoked", tps)


def test_a_removed_members_commit_is_refused_and_it_rejoins(broker):
    """A member removed behind its back (as by session expiry) is refused its commit
    (UNKNOWN_MEMBER_ID: needs the broker's commit fencing), loses its partitions at the
    next poll and joins again."""
    topic_with(broker.bootstrap, "events", 2, 5)
    recorder = Recorder()
    options = dict(group_id="g", auto_offset_reset="earliest", enable_auto_commit=False,
                   heartbeat_interval_ms=HEARTBEAT_MS)
    with Consumer(broker.bootstrap, **options) as zombie, \
            Consumer(broker.bootstrap, **options) as other:
        zombie.subscribe(["events"], listener=recorder)
        other.subscribe(["events"])
        poll_until([zombie, other], lambda: len(zombie.assignment()) == 1
                   and len(other.assignment()) == 1)
        with Wire(broker.host, broker.port) as wire:
            described = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["g"]})
            zombie_tp = next(iter(zombie.assignment()))
            member = next(m for m in described["groups"][0]["members"]
                          if m["assigned"] == [{"topic": "events",
                                                "partitions": [zombie_tp.partition]}])
            left = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
                "group_id": "g", "member_id": member["member_id"], "member_epoch": -1,
                "subscribed_topics": None, "owned": None})
            assert left["error_code"] == 0
        with pytest.raises(UnknownMemberIdError):
            zombie.commit({zombie_tp: 4})
        assert other.committed(zombie_tp) is None
        # At its next poll it drops the partition as lost (no commit), then joins again.
        poll_until([zombie, other], lambda: ("lost", {zombie_tp}) in recorder.calls
                   and recorder.calls[-1][0] == "assigned" and len(zombie.assignment()) == 1)


def test_a_member_that_stops_polling_leaves_and_rejoins_at_its_next_poll(broker):
    topic_with(broker.bootstrap, "events", 2, 1)
    recorder = Recorder()
    options = dict(group_id="g", auto_offset_reset="earliest", heartbeat_interval_ms=HEARTBEAT_MS)
    with Consumer(broker.bootstrap, max_poll_interval_ms=1000, **options) as slow, \
            Consumer(broker.bootstrap, **options) as busy:
        slow.subscribe(["events"], listener=recorder)
        busy.subscribe(["events"])
        poll_until([slow, busy], lambda: len(slow.assignment()) == len(busy.assignment()) == 1)
        held = slow.assignment()
        # slow does not poll: after max_poll_interval_ms it leaves and busy takes everything
        poll_until([busy], lambda: len(busy.assignment()) == 2, timeout_s=10)
        poll_until([slow, busy], lambda: len(slow.assignment()) == len(busy.assignment()) == 1)
        lost_at = recorder.calls.index(("lost", held))  # told at its next poll
        assert [kind for kind, _ in recorder.calls[lost_at + 1:]] == ["assigned"]


async def test_async_consumer_member_with_a_pattern_picks_up_a_new_topic(broker):
    from tslog.client.aio import AsyncAdmin, AsyncConsumer

    topic_with(broker.bootstrap, "events-a", 2, 3)
    heard: list[tuple[str, set]] = []

    class AsyncListener(ConsumerRebalanceListener):
        async def on_partitions_assigned(self, assigned):  # coroutines are awaited
            heard.append(("assigned", assigned))

    async with AsyncConsumer(broker.bootstrap, group_id="g", auto_offset_reset="earliest",
                             heartbeat_interval_ms=HEARTBEAT_MS) as consumer:
        consumer.subscribe(pattern=r"events-.*", listener=AsyncListener())
        records = []
        while len(records) < 6:
            records += await consumer.poll(100)
        async with AsyncAdmin(broker.bootstrap) as admin:
            await admin.create_topic("events-b", 1)
            await admin.create_topic("other", 1)
        while TopicPartition("events-b", 0) not in consumer.assignment():
            await consumer.poll(100)
        assert consumer.assignment() == {TopicPartition("events-a", 0),
                                         TopicPartition("events-a", 1),
                                         TopicPartition("events-b", 0)}
        assert heard[-1] == ("assigned", {TopicPartition("events-b", 0)})
        done = []
        task = await consumer.commit_async(callback=lambda offsets, error: done.append(error))
        await task
        assert done == [None]
        assert await consumer.committed(TopicPartition("events-a", 1)) == 3
        await consumer.unsubscribe()
        assert consumer.assignment() == set()


def test_a_member_removed_while_it_owns_nothing_joins_again(broker):
    topic_with(broker.bootstrap, "events", 1, 1)
    options = dict(group_id="g", auto_offset_reset="earliest", heartbeat_interval_ms=HEARTBEAT_MS)

    def members(wire) -> list[dict]:
        return wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["g"]})["groups"][0][
            "members"]

    with Consumer(broker.bootstrap, **options) as owner, \
            Consumer(broker.bootstrap, **options) as idle, Wire(broker.host, broker.port) as wire:
        owner.subscribe(["events"])
        poll_until([owner], lambda: len(owner.assignment()) == 1)
        idle.subscribe(["events"])
        poll_until([owner, idle], lambda: len(members(wire)) == 2)
        (idle_member,) = [m for m in members(wire) if not m["assigned"]]
        left = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": "g", "member_id": idle_member["member_id"], "member_epoch": -1,
            "subscribed_topics": None, "owned": None})
        assert left["error_code"] == 0 and len(members(wire)) == 1
        poll_until([owner, idle], lambda: len(members(wire)) == 2)  # it noticed and rejoined
        assert owner.assignment() == {TopicPartition("events", 0)} and idle.assignment() == set()
