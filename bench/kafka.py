"""Apache Kafka and tslog side by side, in one invocation, on this machine: 100-byte records.

    python bench/kafka.py                      # 3 runs of each, 200,000 records
    python bench/kafka.py --runs 5 --records 500000 --lookup-sizes 1000000,10000000
    python bench/kafka.py --quick              # a smoke run at a tiny size

Starts a reference Apache Kafka 4.4 (KRaft, one node, started as ``kafka-server-start.sh``
starts it: 1 GiB heap, G1; jars fetched by mvn on first use, tests/helpers/kafka_reference.py)
and a tslog broker with its Kafka listener, one after the other (start to serving timed,
RSS taken idle), then alternates the two in every run, each measured alone: the other one
paused with SIGSTOP meanwhile (``kafka_side/alone.py`` says why):

- produce, acks=1: Kafka's ``kafka-producer-perf-test`` (its defaults: idempotent, linger
  5 ms, 16 KiB batches), confluent-kafka (librdkafka, linger 5 ms) and the raw Kafka
  protocol (pre-encoded batches of 1000, 8 in flight) against both; tslog's raw path and
  ``Producer.send_batch`` on tslog's own port.
- produce, acks=all, each system's default durability: Kafka answers once the leader has the
  batch in its page cache (no fsync); tslog on a single node answers after its group-commit
  fsync. Labelled so: tslog does strictly more.
- produce, durable on both: the Kafka topic with ``flush.messages=1`` (an fsync per append
  before the answer) against tslog's acks=all (group commit), like for like.
- produce 1-record batches (a latency-sensitive producer's, linger 0), acks=1: the raw
  Kafka protocol with one record per batch and request, 8 requests in flight, against both
  (``--records`` / 20 requests); tslog's raw path the same on its port.
- consume from a time: ``kafka-consumer-perf-test`` (from the start, the first record's time:
  the tool takes no time), confluent-kafka ``offsets_for_times`` then consume, against both;
  tslog's Consumer ``seek_to_timestamp`` then ``poll`` and ``poll_batches`` on its port.
- lookup by time at each ``--lookup-sizes`` (``bench/kafka_side/lookups.py``): the raw Kafka
  ListOffsets loop and confluent-kafka against both, tslog's Consumer on its port; p50/p99.
- broker: RSS idle and after the runs, launch to serving, and the broker's CPU time per 1000
  records produced by ``kafka-producer-perf-test`` (``/proc``: a count, steadier than the
  wall-clock rates on a shared machine, and where the broker's share of the time goes).

Prints one table: medians with (min-max) over the runs and tslog's figure over Kafka's (a
tslog-only row over Kafka's best in the same group), with ``os.getloadavg()``. The perf
tools' own records/s include their JVM's warm-up, the same on both sides. Asserts nothing
(tests/kafka_reference/test_bench_kafka_smoke.py runs it at a tiny size).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.broker_bench.common import (  # noqa: E402
    lookup_stats, median, print_table, ratio, spread)
from bench.kafka_side import clients, lookups, raw_kafka  # noqa: E402
from bench.kafka_side.alone import PAUSABLE_KAFKA, alone  # noqa: E402
from tests.helpers import kafka_reference as ref  # noqa: E402
from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402

ACKS1, DEFAULT, DURABLE = "produce acks=1", "produce acks=all, default", "produce durable"
SMALL = "produce 1-record batches"
SHORT = {ACKS1: "acks=1", DEFAULT: "acks=all", DURABLE: "durable"}
CONSUME = "consume from a time"
NOTES = [
    "acks=all, default: each system's default durability. Kafka answers once the batch is "
    "in its page cache (no fsync); tslog, on a single node, after its group-commit fsync",
    "durable: an fsync before every answer on both: the Kafka topic has flush.messages=1, "
    "tslog's is its default (acks=all)",
    "lookup ratio: p99 over p99; a tslog-only row: over Kafka's best in its group "
    "(highest rate, lowest p99)",
    "consume: kafka-consumer-perf-test takes no time, so it reads from the first record",
    "Kafka's launch includes formatting its storage (one JVM) and starting the broker "
    "(another); Kafka and its tools run with its scripts' JVM flags (G1, 1 GiB / 512 MiB)",
    "each broker is measured alone: the other is paused (SIGSTOP) meanwhile, since an idle "
    "Kafka node's background threads take CPU an idle tslog broker does not",
]


def load_average() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_both(base: Path) -> tuple:
    """(kafka, tslog process, tslog's Kafka address, {name: seconds from launch to serving})."""
    ref.jars("broker")
    started = {}
    kafka = ref.KafkaReference(base / "kafka", as_scripts=True, config=PAUSABLE_KAFKA)
    began = time.perf_counter()
    kafka.start()  # includes formatting its storage (one more JVM)
    started["kafka"] = time.perf_counter() - began
    kafka_port = free_port()
    tslog = BrokerProcess(base / "tslog", args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
    began = time.perf_counter()
    tslog.start()
    started["tslog"] = time.perf_counter() - began
    return kafka, tslog, f"127.0.0.1:{kafka_port}", started


def produce_rows(run: int, name: str, bootstrap: str, pid: int, records: int,
                 add) -> None:
    """The produce rows through the Kafka protocol for one side."""
    durable = {"flush.messages": "1"} if name == "kafka" else {}
    for group, acks, config in ((ACKS1, "1", {}), (DEFAULT, "all", {}),
                                (DURABLE, "all", durable)):
        tag = f"{acks}-{'d' if group == DURABLE else 'n'}-{run}"
        clients.create_topic(bootstrap, f"perf-{tag}", config)
        before = cpu_s(pid)
        add(group, "kafka-producer-perf-test", name,
            clients.perf_produce(bootstrap, f"perf-{tag}", records, acks))
        add("broker", f"CPU ms per 1000 records, perf-test {SHORT[group]}", name,
            (cpu_s(pid) - before) * 1e6 / records)
        clients.create_topic(bootstrap, f"confluent-{tag}", config)
        add(group, "confluent-kafka", name,
            clients.confluent_produce(bootstrap, f"confluent-{tag}", records, acks))
        clients.create_topic(bootstrap, f"raw-{tag}", config)
        seconds = raw_kafka.produce(bootstrap, f"raw-{tag}", records // 1000,
                                    1 if acks == "1" else -1)
        add(group, "raw Kafka protocol, 1000 per batch", name, records // 1000 * 1000 / seconds)
    clients.create_topic(bootstrap, f"small-{run}")
    small = max(50, records // 20)
    raw_kafka.produce(bootstrap, f"small-{run}", max(50, small // 10), 1, records=1)  # warm
    seconds = raw_kafka.produce(bootstrap, f"small-{run}", small, 1, records=1)
    add(SMALL, "raw Kafka protocol, 1 per batch, 8 in flight", name, small / seconds)


def one_run(run: int, args, kafka, tslog, tslog_kafka: str, figures: dict, solo) -> None:
    """Every measurement once, the two brokers alternating first by run, each alone
    (``solo(name)``: the other paused, ``kafka_side/alone.py``)."""
    sides = [("kafka", kafka.bootstrap, kafka.process.pid),
             ("tslog", tslog_kafka, tslog.process.pid)]
    if run % 2:
        sides.reverse()
    for name, bootstrap, pid in sides:
        with solo(name):
            one_side(run, args, name, bootstrap, pid, tslog, figures)


def one_side(run: int, args, name: str, bootstrap: str, pid: int, tslog, figures: dict) -> None:
    def add(op, path, side, value):
        figures.setdefault((op, path, side), []).append(value)

    produce_rows(run, name, bootstrap, pid, args.records, add)
    add(CONSUME, "kafka-consumer-perf-test (from the first record)", name,
        clients.perf_consume(bootstrap, f"perf-1-n-{run}", args.records))
    first, _, count = clients.record_times(bootstrap, f"confluent-1-n-{run}")
    add(CONSUME, "confluent-kafka", name, clients.confluent_consume_from(
        bootstrap, f"confluent-1-n-{run}", first, count))
    if name == "tslog":
        tslog_native_rows(run, args, tslog, bootstrap, first, count, add)


def tslog_native_rows(run: int, args, tslog, bootstrap: str, first: int, count: int,
                      add) -> None:
    """The rows only tslog has: its own port's client and raw path."""
    native = tslog.bootstrap
    for batches, path in ((False, "tslog Consumer.poll, native port"),
                          (True, "tslog Consumer.poll_batches, native port")):
        add(CONSUME, path, "tslog", clients.tslog_consume_from(
            native, f"confluent-1-n-{run}", first, count, batches))
    for group, acks in ((ACKS1, 1), (DEFAULT, -1)):
        topic = f"native-{acks}-{run}"
        clients.create_topic(bootstrap, topic)
        value = clients.tslog_produce_raw(tslog.port, topic, args.records, acks)
        add(group, "tslog raw, native port", "tslog", value)
        if acks == -1:
            add(DURABLE, "tslog raw, native port", "tslog", value)
    clients.create_topic(bootstrap, f"small-native-{run}")
    add(SMALL, "tslog raw, native port, 8 in flight", "tslog",
        clients.tslog_produce_small_raw(tslog.port, f"small-native-{run}",
                                        max(50, args.records // 20)))
    clients.create_topic(bootstrap, f"client-{run}")
    add(ACKS1, "tslog Producer.send_batch, native port", "tslog",
        clients.tslog_produce_client(native, f"client-{run}", args.records, 1))


def _lookup_cells(figures: dict, op: str, path: str) -> tuple[list, float | None]:
    cells, p99 = [], {}
    for name in ("kafka", "tslog"):
        runs = figures.get((op, path, name))
        if runs is None:
            cells.append("-")
            continue
        p50s, p99s, _ = lookup_stats(runs)
        p99[name] = median(p99s)
        cells.append(f"p50 {spread(p50s, 1e6)} / p99 {spread(p99s, 1e6)} us")
    return cells, p99


def rows_of(figures: dict) -> list[list[str]]:
    """One row per (op, path), in the order measured; a tslog-only row is compared with
    Kafka's best in its group (highest rate, lowest p99, lowest CPU)."""
    rows, best = [], {}
    keys = list(dict.fromkeys((op, path) for op, path, _ in figures))
    ops = list(dict.fromkeys(op for op, _ in keys))
    keys.sort(key=lambda key: ops.index(key[0]))  # stable: each op's paths as measured
    for op, path in keys:  # Kafka's best per group first
        runs = figures.get((op, path, "kafka"))
        if runs is not None:
            value = median(lookup_stats(runs)[1]) if op.startswith("lookup") else median(runs)
            lower = op.startswith("lookup") or op == "broker"
            if op not in best or (value < best[op] if lower else value > best[op]):
                best[op] = value
    for op, path in keys:
        kafka, tslog = figures.get((op, path, "kafka")), figures.get((op, path, "tslog"))
        if op.startswith("lookup"):
            cells, p99 = _lookup_cells(figures, op, path)
            base = p99.get("kafka", best.get(op))
            rows.append([op, path, *cells, _ratio(p99.get("tslog"), base, kafka is None)])
            continue
        digits = 2 if op == "broker" else 0
        base = median(kafka) if kafka else best.get(op)
        rows.append([op, path, spread(kafka, digits=digits) if kafka else "-",
                     spread(tslog, digits=digits) if tslog else "-",
                     _ratio(median(tslog) if tslog else None, base, kafka is None)])
    return rows


def _ratio(tslog, kafka, against_best: bool) -> str:
    text = ratio(tslog, kafka)
    return f"{text} of Kafka's best" if against_best and text != "-" else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--lookup-sizes", default="1000000,10000000")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 1 run of 2,000 records, lookups at 2,000 and 3,000")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.records, args.lookups, args.lookup_sizes = 1, 2000, 20, "2000,3000"
    sizes = [int(size) for size in args.lookup_sizes.split(",")]
    load_before = load_average()
    # SIGTERM ends the run through the finally below, which stops both brokers by pid
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as scratch:
        kafka, tslog, tslog_kafka, started = start_both(Path(scratch))
        try:
            pids = {"kafka": kafka.process.pid, "tslog": tslog.process.pid}
            idle = {name: rss_mb(pid) for name, pid in pids.items()}
            sides = {"kafka": kafka.bootstrap, "tslog": tslog_kafka}
            for bootstrap in sides.values():
                clients.create_topic(bootstrap, "probe")
            probes = {name: (bootstrap, "probe") for name, bootstrap in sides.items()}

            def solo(name: str):
                return alone(name, pids, probes)

            topics = lookups.fill(sides, sizes)
            figures: dict = {}
            for run in range(args.runs):
                one_run(run, args, kafka, tslog, tslog_kafka, figures, solo)
                lookups.one_run(run, sides, tslog.bootstrap, topics, args.lookups, figures,
                                solo)
            after = {name: rss_mb(pid) for name, pid in pids.items()}
        finally:
            kafka.stop()
            tslog.stop()
    rows = rows_of(figures)
    for label, values in (("RSS idle, after start (MB)", idle),
                          ("RSS after the runs (MB)", after),
                          ("launch to serving (s)", started)):
        rows.append(["broker", label, f"{values['kafka']:,.1f}", f"{values['tslog']:,.1f}",
                     ratio(values["tslog"], values["kafka"])])
    print_table(f"Apache Kafka 4.4 and tslog, {args.records:,} records of 100 B, "
                f"{args.runs} runs (records/s unless said; median (min-max))",
                ["op", "path", "Apache Kafka", "tslog", "tslog / Kafka"], rows,
                notes=[*NOTES, f"load average (1, 5, 15 min): {load_before} at the start, "
                               f"{load_average()} at the end"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
