"""Failover times at default broker settings, per fault kind, on hosts of their own.

Three brokers and etcd, each in a network namespace (``tests/faults``: needs root, ``ip``
and ``nft``), a replication-factor-3 partition, and a prober on the clients' host that sends
one acks=all record at a time with an idempotent producer, and a second prober that sends
raw acks=all produces straight to every other broker. For each fault on the partition's
leader it prints how long from the fault until another broker acknowledged a record (the
cluster's failover), and the producer's longest wait for an acknowledgement from the fault
until the new leader had taken over (what an application sees: the cluster's failover plus
the client's own timeouts; a leader cut off from etcd acknowledges until its lease is in
doubt, so the wait starts there), median, worst and all runs; then it heals, restarts what
was killed and waits for a full ISR:

- ``kill``: SIGKILL (the leader's sockets close; followers notice and the broker's session
  is ended early once its port refuses);
- ``isolate``: every packet to and from the leader dropped (no socket closes: the lease
  decides);
- ``cut_etcd``: only the leader's link to etcd dropped.

It also counts false alarms, which must be 0: leader changes during pauses (SIGSTOP) of 0.4
of the session, and during a produce load (``--load-s`` of acks=1 batches as fast as one
producer sends them).

    python bench/failover.py                 # 10 of each, default settings
    python bench/failover.py --runs 3 --kinds kill
    python bench/failover.py --session-ms 4000   # another broker_session_timeout_ms

The producer uses ``request_timeout_ms`` 2000 (the client default is 30000): a request sent
to a leader that vanished silently waits out that timeout (plus the 5 s a Produce gets for
the broker's own acks=all wait) before the retry that finds the new leader. Its
``connect_timeout_ms`` (default 3000) is waited out likewise when it reconnects to a leader
whose packets are dropped, after which it asks another broker; these waits are the client's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.faults and bench

from bench.broker_bench.common import print_table  # noqa: E402
from tests.faults import net  # noqa: E402
from tests.faults.cluster import FaultCluster, wait_until  # noqa: E402
from tests.helpers.wire import Wire  # noqa: E402
from tslog.client import Admin, Producer  # noqa: E402
from tslog.protocol.records import build_batch  # noqa: E402

TOPIC = "failover"
DEFAULT_SESSION_S = 10.0
STUCK_S = 30.0  # the producer's wait is reported as inf past this after the new leader's ack


def full_isr(cluster: FaultCluster):
    return wait_until(lambda: (p := cluster.describe(TOPIC)).leader >= 0
                      and len(p.isr) == len(cluster.brokers) and p, 120, "a full ISR")


def first_ack_elsewhere(cluster: FaultCluster, leader: int, started: float) -> float:
    """Seconds from ``started`` until another broker acknowledges an acks=all produce sent
    straight to it (raw requests to every other broker, every 20 ms): the cluster's
    failover, without any client's timeouts."""
    wires: dict[int, Wire] = {}
    try:
        while True:
            for node in range(len(cluster.brokers)):
                if node == leader:
                    continue
                try:
                    wire = wires.get(node) or wires.setdefault(node, cluster.wire(node, 2.0))
                    answer = wire.produce(TOPIC, 0, build_batch([b"raw-probe"]), acks=-1)
                except OSError:
                    wires.pop(node, None)
                    continue
                if answer["error_code"] == 0:
                    return time.monotonic() - started
            time.sleep(0.02)
    finally:
        for wire in wires.values():
            wire.close()


def next_ack_after(cluster: FaultCluster, leader: int, fault) -> tuple[float, float]:
    """Apply ``fault``; return (seconds until another broker acknowledged a raw produce,
    the producer's longest wait for an acknowledgement from the fault until it had one
    after the new leader's, or ``inf`` if it had none within ``STUCK_S`` of it). Heals."""
    producer = Producer(cluster.bootstrap, acks="all", enable_idempotence=True, linger_ms=0,
                        request_timeout_ms=2000)
    try:
        producer.send(TOPIC, b"warm").get(60)
        started = last = time.monotonic()
        fault()
        raw: list[float] = []
        prober = threading.Thread(
            target=lambda: raw.append(first_ack_elsewhere(cluster, leader, started)))
        prober.start()
        longest = 0.0
        while not raw or last < started + raw[0]:
            if raw and time.monotonic() > started + raw[0] + STUCK_S:
                longest = float("inf")
                break
            try:
                producer.send(TOPIC, b"probe").get(5)
            except Exception:  # noqa: BLE001 - failed or still waiting: send the next one
                continue
            now = time.monotonic()
            longest, last = max(longest, now - last), now
        prober.join()
    finally:
        heal(cluster)  # before the close, which waits for what is still unacknowledged
        producer.close()
    return raw[0], longest


def heal(cluster: FaultCluster) -> None:
    cluster.net.heal()
    for node, broker in enumerate(cluster.brokers):
        cluster.resume(node)
        if not broker.running:
            cluster.restart(node)
    full_isr(cluster)


def measure(cluster: FaultCluster, kind: str, runs: int) -> list[tuple[float, float]]:
    times = []
    for _ in range(runs):
        leader = full_isr(cluster).leader
        faults = {
            "kill": lambda: cluster.kill(leader),
            "isolate": lambda: cluster.net.isolate(cluster.name(leader)),
            "cut_etcd": lambda: cluster.net.cut(cluster.name(leader), "etcd"),
        }
        times.append(next_ack_after(cluster, leader, faults[kind]))
    return times


def false_alarms(cluster: FaultCluster, session_s: float, runs: int, load_s: float) -> list:
    """[(what, leader changes)] for short pauses and for a produce load."""
    before = full_isr(cluster)
    for _ in range(runs):
        node = cluster.describe(TOPIC).leader
        cluster.pause(node)
        time.sleep(0.4 * session_s)
        cluster.resume(node)
    after_pauses = full_isr(cluster)
    deadline = time.monotonic() + load_s
    with Producer(cluster.bootstrap, acks=1, linger_ms=5) as producer:
        while time.monotonic() < deadline:
            for _ in range(1000):
                producer.send(TOPIC, b"x" * 100)
            producer.flush()
    after_load = full_isr(cluster)
    return [(f"{runs} pauses of 0.4 session", after_pauses.leader_epoch - before.leader_epoch),
            (f"{load_s:.0f} s of acks=1 load", after_load.leader_epoch - after_pauses.leader_epoch)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kinds", default="kill,isolate,cut_etcd")
    parser.add_argument("--session-ms", type=int, default=None,
                        help="broker_session_timeout_ms (default: the broker's, 10000)")
    parser.add_argument("--load-s", type=float, default=20.0)
    args = parser.parse_args()
    why = net.available()
    if why:
        sys.exit(f"bench/failover.py: {why}")
    config = {} if args.session_ms is None else {"broker_session_timeout_ms": args.session_ms}
    session_s = (args.session_ms or DEFAULT_SESSION_S * 1000) / 1000
    with tempfile.TemporaryDirectory(prefix="tslog-failover-") as base:
        cluster = FaultCluster(Path(base), config=config)
        try:
            cluster.start()
            with Admin(cluster.bootstrap) as admin:
                admin.create_topic(TOPIC, partitions=1, replication_factor=3)
            rows = []
            for kind in args.kinds.split(","):
                pairs = measure(cluster, kind, args.runs)
                for label, times in (("new leader", sorted(p[0] for p in pairs)),
                                     ("producer (longest wait)",
                                      sorted(p[1] for p in pairs))):
                    rows.append([kind, label, len(times), f"{statistics.median(times):.2f}",
                                 f"{times[-1]:.2f}", " ".join(f"{t:.2f}" for t in times)])
                    print(f"{kind} ({label}): {rows[-1][5]}", flush=True)
            alarms = false_alarms(cluster, session_s, args.runs, args.load_s)
        finally:
            cluster.close()
    print_table(f"Failover: fault on the leader -> next acks=all record acknowledged (s), "
                f"session {session_s:.0f} s", ["fault", "acknowledged by", "runs", "median",
                                               "worst", "all"], rows,
                ["3 brokers + etcd, each in its own network namespace, one machine",
                 "new leader: raw produces sent to every other broker every 20 ms",
                 "producer: an idempotent Producer (request_timeout_ms 2000, "
                 "connect_timeout_ms at its default)"])
    print_table("False alarms (leader changes; must be 0)", ["what", "leader changes"],
                [[what, count] for what, count in alarms])


if __name__ == "__main__":
    main()
