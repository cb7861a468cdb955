"""Produce throughput while a partition moves, with and without the catch-up throttle.

Each run starts etcd and brokers 0-2 (loopback, temporary directories), creates a
replication-factor-3 topic of two partitions, fills partition 0 with ``--preload-mb`` of
records, starts brokers 3 and 4, and then, while one producer sends acks=all records to
partition 1 as fast as it is answered, moves partition 0 from its brokers to {2, 3, 4}. It
reports the producer's acknowledged records/s over the move (from the request until the
partition is on its new brokers, all in sync) and how long the move took. Three modes, run
in alternating order within one invocation:

- ``no move``: the same producer, the same cluster, no reassignment (the baseline; measured
  over ``--baseline-s``);
- ``move``: the reassignment, no throttle;
- ``move, throttled``: brokers started with ``leader_replication_throttled_rate``
  (``--throttle-mb-s``).

The machine is shared: wall-clock figures move 10-30 % between runs, so the table gives the
median and the spread of ``--runs`` runs, the ratio to the baseline of the same invocation,
and the load average when the table was printed. The issue's target: the throttled move's
throughput at least 0.7x the baseline's.

    python bench/reassign.py                    # 3 runs per mode, 64 MiB, 16 MiB/s
    python bench/reassign.py --quick            # a smoke run: 1 run, 1 MiB
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from bench.broker_bench.common import median, print_table, ratio, spread, verdict  # noqa: E402
from tests.helpers.broker_process import start_cluster  # noqa: E402
from tests.helpers.etcd_process import EtcdProcess  # noqa: E402
from tslog.client import Admin, Producer, TopicPartition  # noqa: E402

TOPIC = "moving"
MODES = ("no move", "move", "move, throttled")
RECORD = b"r" * 1000


class Load(threading.Thread):
    """Sends acks=all records to partition 1 until stopped; counts acknowledgements."""

    def __init__(self, servers: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(servers, acks="all", linger_ms=1)
        self.acked = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            futures = [self.producer.send(TOPIC, RECORD, partition=1) for _ in range(100)]
            for future in futures:
                future.get(60)
            self.acked += len(futures)

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        self.producer.close()


def in_sync_on(admin: Admin, replicas: list[int]) -> bool:
    info = admin.describe_topic(TOPIC).partitions[0]
    return sorted(info.replicas) == sorted(info.isr) == sorted(replicas)


def one_run(base: Path, mode: str, args) -> tuple[float, float | None]:
    """(acknowledged records/s, seconds the move took or None)."""
    etcd = EtcdProcess(base / "etcd").start()
    config = {}
    if mode == "move, throttled":
        config["leader_replication_throttled_rate"] = int(args.throttle_mb_s * 2**20)
    brokers = []
    try:
        brokers = start_cluster(base, etcd.endpoint, 3, config=config)
        servers = ",".join(b.bootstrap for b in brokers)
        with Admin(servers) as admin:
            admin.create_topic(TOPIC, partitions=2, replication_factor=3)
        with Producer(servers, acks="all", linger_ms=5) as producer:
            for future in [producer.send(TOPIC, RECORD * 16, partition=0)
                           for _ in range(args.preload_mb * 64)]:
                future.get(60)
        brokers += start_cluster(base, etcd.endpoint, 2, config=config, first_node=3)
        servers = ",".join(b.bootstrap for b in brokers)
        return measure(servers, mode, args)
    finally:
        for broker in brokers:
            broker.kill()
        etcd.stop()


def measure(servers: str, mode: str, args) -> tuple[float, float | None]:
    load = Load(servers)
    load.start()
    time.sleep(0.5)  # the producer's connections and metadata, before the clock starts
    with Admin(servers) as admin:
        acked, started = load.acked, time.monotonic()
        took = None
        if mode == "no move":
            time.sleep(args.baseline_s)
        else:
            admin.alter_partition_reassignments({TopicPartition(TOPIC, 0): [2, 3, 4]})
            while not in_sync_on(admin, [2, 3, 4]):
                time.sleep(0.05)
            took = time.monotonic() - started
        elapsed = time.monotonic() - started
        rate = (load.acked - acked) / elapsed
    load.stop()
    return rate, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--preload-mb", type=int, default=64)
    parser.add_argument("--throttle-mb-s", type=float, default=16.0)
    parser.add_argument("--baseline-s", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 run per mode, 1 MiB, 0.5 s of baseline")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.preload_mb, args.baseline_s = 1, 1, 0.5
    rates: dict[str, list[float]] = {mode: [] for mode in MODES}
    moves: dict[str, list[float]] = {mode: [] for mode in MODES}
    for run in range(args.runs):
        order = MODES if run % 2 == 0 else tuple(reversed(MODES))
        for mode in order:
            with tempfile.TemporaryDirectory(prefix="tslog-bench-reassign-") as base:
                rate, took = one_run(Path(base), mode, args)
            rates[mode].append(rate)
            if took is not None:
                moves[mode].append(took)
            print(f"run {run + 1} {mode}: {rate:,.0f} records/s"
                  + ("" if took is None else f", move {took:.2f} s"), flush=True)
    baseline = median(rates["no move"])
    rows = [[mode, spread(rates[mode]), ratio(median(rates[mode]), baseline),
             spread(moves[mode], digits=2) if moves[mode] else "-"] for mode in MODES]
    throttled = median(rates["move, throttled"]) / baseline if baseline else None
    print_table(
        f"acks=all produce during a move of {args.preload_mb} MiB to two new brokers "
        f"(throttle {args.throttle_mb_s:g} MiB/s), {args.runs} runs per mode",
        ["mode", "records/s median (min-max)", "vs no move", "move s median (min-max)"],
        rows,
        notes=[f"throttled move >= 0.7x no move: "
               f"{verdict(None if throttled is None else throttled >= 0.7)}",
               f"load average {os.getloadavg()}: a shared machine; compare the ratios of "
               f"one invocation, not figures across invocations"])


if __name__ == "__main__":
    main()
