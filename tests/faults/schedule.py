"""Fault schedules: a seed picks the faults, each fault is applied to the partition's current
leader (or to etcd), healed, and followed by the checks of ``checks.py``.

A schedule is printed before it runs (``seed=..., faults=[...]``), so a failure replays with
the same seed. Every fault returns a short note of what the clients saw, also printed.

The faults (``lease`` = the brokers' session timeout):

- ``kill``: SIGKILL the leader; once another broker leads, start it again.
- ``pause_long``: SIGSTOP the leader until another broker leads (past its lease). A Produce
  acks=1 queued in the paused leader's socket is answered after SIGCONT with an error:
  the deposed leader steps down without acknowledging it.
- ``pause_short``: SIGSTOP the leader for 0.4 lease: no failover may follow.
- ``cut_etcd``: drop the leader's traffic with etcd only, until another broker leads; the
  old leader, still reachable by clients and still believing it leads, must refuse an acks=1
  produce (its lease may have expired).
- ``cut_followers`` / ``one_way``: drop traffic between the leader and its followers (both
  ways / leader to followers only) for a few seconds: the leader keeps its lease, so no
  failover may follow (the ISR may shrink and grow back).
- ``isolate``: drop everything to and from the leader until another broker leads.
- ``etcd_outage``: drop every packet to and from etcd for ``etcd_outage_s``; a produce to
  the leader during it is either acknowledged (lease still sure) or refused with the
  retriable NOT_LEADER_OR_FOLLOWER, never lost once acknowledged; the cluster recovers alone.
- ``clock_step``: restart a follower with its clock 10 s behind, then kill the leader (the
  stepped broker may lead next): LogAppendTime must not decrease.
"""

from __future__ import annotations

import random
import time

from tests.faults.checks import LeaderMoved, Ledger, Writer
from tests.faults.cluster import FaultCluster, wait_until
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch

KINDS = ("kill", "pause_long", "pause_short", "cut_etcd", "cut_followers", "one_way",
         "isolate", "etcd_outage", "clock_step")
RECOVERY_S = 90.0  # how long a test waits for a recovery before failing (a hang bound)
TOPIC_CONFIG = {"replica.lag.time.max.ms": "3000"}


def plan(seed: int, count: int, kinds=KINDS) -> list[str]:
    """The faults of schedule ``seed``: every kind once, if count allows, then random."""
    rng = random.Random(seed)
    faults = rng.sample(list(kinds), min(count, len(kinds)))
    faults += [rng.choice(kinds) for _ in range(count - len(faults))]
    return faults


class Schedule:
    """Runs faults against ``cluster`` under a ``Writer``; ``run`` checks after each."""

    def __init__(self, cluster: FaultCluster, topic: str, lease_s: float,
                 etcd_outage_s: float) -> None:
        self.cluster = cluster
        self.topic = topic
        self.lease_s = lease_s
        self.etcd_outage_s = etcd_outage_s
        self.ledger = Ledger(topic)
        self.notes: list[str] = []
        self.refused_after_lease = 0  # produces a possibly deposed leader refused
        self.probes = 0

    def leader(self):
        return wait_until(lambda: (p := self.cluster.describe(self.topic)).leader >= 0 and p,
                          RECOVERY_S, "a leader")

    def new_leader(self, old) -> object:
        """Wait until a broker other than ``old.leader`` leads in a later epoch."""
        return wait_until(lambda: (p := self.cluster.describe(self.topic)).leader >= 0
                          and p.leader != old.leader and p.leader_epoch > old.leader_epoch
                          and p, RECOVERY_S, f"a leader other than {old.leader}")

    def run(self, faults: list[str], writer: Writer) -> None:
        for fault in faults:
            before = self.leader()
            note = getattr(self, f"fault_{fault}")(before)
            self.cluster.net.heal()
            count = self.check(writer.acknowledged())
            self.notes.append(f"{fault}: {note}; {count} records checked")
            print(self.notes[-1], flush=True)

    def check(self, acknowledged: dict) -> int:
        """Recover, then run the ledger's checks against the leader (again if it moves or
        refuses, within ``RECOVERY_S`` like every other wait here: a leader that fenced
        itself in the fault answers NOT_LEADER_OR_FOLLOWER until the cluster elects again,
        which takes a session timeout, not ten quick tries)."""
        deadline = time.monotonic() + RECOVERY_S
        while True:
            self.recover()
            try:
                with self.cluster.wire(self.leader().leader) as wire:
                    return self.ledger.check(wire, acknowledged)
            except LeaderMoved:
                if time.monotonic() > deadline:
                    raise AssertionError("the leader kept moving after the fault was healed")
                time.sleep(0.2)

    def recover(self) -> None:
        """Every broker running and resumed, a leader, a full ISR."""
        cluster = self.cluster
        for node in list(cluster.paused):
            cluster.resume(node)
        for node, broker in enumerate(cluster.brokers):
            if not broker.running:
                cluster.restart(node)
        wait_until(lambda: (p := cluster.describe(self.topic)).leader >= 0
                   and len(p.isr) == len(cluster.brokers), RECOVERY_S, "a full ISR")

    def probe_acks1(self, node: int) -> int:
        """A Produce acks=1 straight to broker ``node``: its error code (0 = acknowledged).
        A refused value is recorded: it must never appear in the log."""
        self.probes += 1
        value = b"probe-%d" % self.probes
        with self.cluster.wire(node) as wire:
            answer = wire.produce(self.topic, 0, build_batch([value]), acks=1)
        if answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            self.ledger.refused.add(value)
        return answer["error_code"]

    # -- the faults --------------------------------------------------------------------------

    def fault_kill(self, before) -> str:
        self.cluster.kill(before.leader)
        after = self.new_leader(before)
        return f"killed {before.leader}, {after.leader} leads"

    def fault_pause_long(self, before) -> str:
        node = before.leader
        self.cluster.pause(node)
        wire = self.cluster.wire(node, timeout_s=RECOVERY_S)  # the kernel still accepts
        try:
            wire.send(ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 10_000, "topics": [
                {"topic": self.topic, "partitions": [
                    {"partition": 0, "records": build_batch([b"queued-while-paused"])}]}]})
            after = self.new_leader(before)
            self.cluster.resume(node)
            code = wire.receive(ApiKey.PRODUCE)[1]["topics"][0]["partitions"][0]["error_code"]
        finally:
            wire.close()
        assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER, \
            f"a leader paused past its lease answered a queued acks=1 produce with {code}"
        self.ledger.refused.add(b"queued-while-paused")
        self.refused_after_lease += 1
        return f"paused {node} past its lease, {after.leader} leads, queued acks=1 refused"

    def fault_pause_short(self, before) -> str:
        self.cluster.pause(before.leader)
        time.sleep(0.4 * self.lease_s)
        self.cluster.resume(before.leader)
        after = self.leader()
        assert (after.leader, after.leader_epoch) == (before.leader, before.leader_epoch), \
            f"a pause of 0.4 lease moved the leader: {before} -> {after}"
        return f"paused {before.leader} for 0.4 lease, no failover"

    def fault_cut_etcd(self, before) -> str:
        self.cluster.net.cut(self.cluster.name(before.leader), "etcd")
        after = self.new_leader(before)
        code = self.probe_acks1(before.leader)
        assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER, \
            f"a leader cut off from etcd past its lease answered acks=1 with {code}"
        self.refused_after_lease += 1
        return f"cut {before.leader} from etcd, {after.leader} leads, old leader refuses acks=1"

    def _cut_from_followers(self, before, one_way: bool) -> str:
        net, name = self.cluster.net, self.cluster.name(before.leader)
        for follower in before.replicas:
            if follower != before.leader:
                net.cut(name, self.cluster.name(follower), one_way=one_way)
        time.sleep(self.lease_s + 1)
        after = self.leader()
        assert (after.leader, after.leader_epoch) == (before.leader, before.leader_epoch), \
            f"cutting followers moved the leader: {before} -> {after}"
        return f"cut {before.leader} from its followers{' one way' if one_way else ''}, " \
               f"ISR {after.isr}, no failover"

    def fault_cut_followers(self, before) -> str:
        return self._cut_from_followers(before, one_way=False)

    def fault_one_way(self, before) -> str:
        return self._cut_from_followers(before, one_way=True)

    def fault_isolate(self, before) -> str:
        self.cluster.net.isolate(self.cluster.name(before.leader))
        after = self.new_leader(before)
        return f"isolated {before.leader}, {after.leader} leads"

    def fault_etcd_outage(self, before) -> str:
        self.cluster.net.isolate("etcd")
        deadline = time.monotonic() + self.etcd_outage_s
        seen: dict[str, int] = {}
        while time.monotonic() < deadline:
            code = self.probe_acks1(before.leader)
            name = "acknowledged" if code == 0 else ErrorCode(code).name
            seen[name] = seen.get(name, 0) + 1
            assert code in (0, ErrorCode.NOT_LEADER_OR_FOLLOWER), f"etcd outage: {code}"
            time.sleep(0.5)
        return f"etcd unreachable {self.etcd_outage_s:.0f} s, leader answered {seen}"

    def fault_clock_step(self, before) -> str:
        follower = next(r for r in before.replicas if r != before.leader)
        self.cluster.kill(follower)
        self.cluster.restart(follower, clock_offset_ms=-10_000)
        self.recover()
        self.cluster.kill(before.leader)
        after = self.new_leader(before)
        return f"broker {follower} 10 s behind, killed {before.leader}, {after.leader} leads"
