"""Apache Kafka and tslog side by side, in one invocation, on this machine: 100-byte records.

    python bench/kafka.py                      # 3 runs of each, 200,000 records
    python bench/kafka.py --runs 5 --records 500000

Starts a reference Apache Kafka 4.4 (KRaft, one node; tests/helpers/kafka_reference.py, jars
fetched by mvn on first use) and a tslog broker with its Kafka listener, one after the
other (start to serving is timed for each), then alternates the two in every run:

- produce: Kafka's ``kafka-producer-perf-test`` (acks=1 and acks=all) against both;
  confluent-kafka (librdkafka, acks=1, linger 5 ms) against both; tslog's own client
  (``Producer.send_batch``) on tslog's port.
- consume: ``kafka-consumer-perf-test`` against both; confluent-kafka reading everything
  from the start of a partition against both.
- ListOffsets by time: ``offsets_for_times`` of one random time per call, one call at a time,
  through confluent-kafka against both and tslog's own Consumer on its port; p50 and p99.
- broker RSS after the runs, and time from launch to answering ApiVersions.

Prints one table: medians with (min-max) over the runs, and tslog's figure over Kafka's.
The perf tools' own records/s include their JVM's warm-up, the same on both sides. Asserts
nothing (tests/kafka_reference/test_bench_kafka_smoke.py runs it at a tiny size).
"""

from __future__ import annotations

import argparse
import random
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.broker_bench.common import (  # noqa: E402
    lookup_stats,
    median,
    print_table,
    ratio,
    spread,
)
from tests.helpers import kafka_reference as ref  # noqa: E402
from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402

VALUE = b"v" * 100
TOPIC = "bench"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_both(base: Path) -> tuple:
    """(kafka, tslog process, tslog's Kafka address, {name: seconds from launch to serving})."""
    ref.jars("broker")
    started = {}
    kafka = ref.KafkaReference(base / "kafka")
    began = time.perf_counter()
    kafka.start()  # includes formatting its storage (one more JVM)
    started["kafka"] = time.perf_counter() - began
    kafka_port = free_port()
    tslog = BrokerProcess(base / "tslog", args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
    began = time.perf_counter()
    tslog.start()
    started["tslog"] = time.perf_counter() - began
    return kafka, tslog, f"127.0.0.1:{kafka_port}", started


def create_topic(bootstrap: str, name: str, timestamp_type: str = "LogAppendTime") -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config={
        "message.timestamp.type": timestamp_type})])[name].result(60)


def perf_produce(bootstrap: str, topic: str, records: int, acks: str) -> float:
    done = ref.run_tool(ref.PRODUCER_PERF, "--topic", topic, "--num-records", str(records),
                        "--record-size", "100", "--throughput", "-1", "--bootstrap-server",
                        bootstrap, "--command-property", f"acks={acks}", timeout_s=900)
    found = re.findall(r"^\d+ records sent, ([\d.]+) records/sec", done.stdout, re.M)
    if done.returncode or not found:
        raise RuntimeError(f"producer perf test failed:\n{done.stdout}\n{done.stderr}")
    return float(found[-1])


def perf_consume(bootstrap: str, topic: str, records: int) -> float:
    done = ref.run_tool(ref.CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic,
                        "--messages", str(records), timeout_s=900)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode or len(lines) < 2:
        raise RuntimeError(f"consumer perf test failed:\n{done.stdout}\n{done.stderr}")
    fields = dict(zip((h.strip() for h in lines[-2].split(",")),
                      (v.strip() for v in lines[-1].split(","))))
    return float(fields["nMsg.sec"])


def confluent_produce(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000})
    failed: list = []

    def delivered(error, _message) -> None:
        if error is not None:
            failed.append(error)

    began = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, VALUE, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)
    left = producer.flush(300)
    if left or failed:  # a figure only counts records the broker took
        raise RuntimeError(f"confluent-kafka to {bootstrap}: {left} unsent, {len(failed)} "
                           f"failed, first {failed[:1]}")
    return records / (time.perf_counter() - began)


def confluent_consume(bootstrap: str, topic: str, records: int) -> float:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    consumer.assign([TopicPartition(topic, 0, 0)])
    read, idle, began = 0, 0, time.perf_counter()
    try:
        while read < records:
            batch = consumer.consume(min(10_000, records - read), 1.0)
            idle = 0 if batch else idle + 1
            if idle == 30:  # 30 empty polls in a row: the records are not there
                raise RuntimeError(f"confluent-kafka from {bootstrap}: {read} of {records}")
            read += sum(1 for message in batch if message.error() is None)
        return read / (time.perf_counter() - began)
    finally:
        consumer.close()


def tslog_produce(native: str, topic: str, records: int) -> float:
    from tslog.client import Producer
    began = time.perf_counter()
    with Producer(native, acks=1, linger_ms=5) as producer:
        for start in range(0, records, 1000):
            producer.send_batch(topic, [VALUE] * min(1000, records - start), partition=0)
        producer.flush()
    return records / (time.perf_counter() - began)


def confluent_lookups(bootstrap: str, topic: str, times: list[int]) -> list[float]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused"})
    latencies = []
    try:
        consumer.offsets_for_times([TopicPartition(topic, 0, times[0])], 30)  # connect first
        for when in times:
            began = time.perf_counter()
            consumer.offsets_for_times([TopicPartition(topic, 0, when)], 30)
            latencies.append(time.perf_counter() - began)
    finally:
        consumer.close()
    return latencies


def tslog_lookups(native: str, topic: str, times: list[int]) -> list[float]:
    from tslog.client import Consumer, TopicPartition
    tp, latencies = TopicPartition(topic, 0), []
    with Consumer(native) as consumer:
        consumer.offsets_for_times({tp: times[0]})
        for when in times:
            began = time.perf_counter()
            consumer.offsets_for_times({tp: when})
            latencies.append(time.perf_counter() - began)
    return latencies


def lookup_times(bootstrap: str, topic: str, count: int, seed: int) -> list[int]:
    """Random times within the topic's records (read back from its first and last record
    through the Kafka protocol, so the same code serves both brokers)."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), 30)
        stamps = []
        for offset in (low, high - 1):
            consumer.assign([TopicPartition(topic, 0, offset)])
            message = None
            while message is None or message.error() is not None:
                message = consumer.poll(5.0)
            stamps.append(message.timestamp()[1])
    finally:
        consumer.close()
    rng = random.Random(seed)
    return [rng.randint(stamps[0], stamps[1]) for _ in range(count)]


def one_run(run: int, args, kafka_bootstrap: str, tslog_kafka: str, native: str,
            figures: dict) -> None:
    """Every measurement once, the two brokers alternating first by run."""
    sides = [("kafka", kafka_bootstrap), ("tslog", tslog_kafka)]
    if run % 2:
        sides.reverse()
    for name, bootstrap in sides:
        for acks in ("1", "all"):
            topic = f"perf-{acks}-{run}"
            create_topic(bootstrap, topic)
            figures.setdefault(("produce", f"kafka-producer-perf-test acks={acks}", name),
                               []).append(perf_produce(bootstrap, topic, args.records, acks))
        topic = f"{TOPIC}-{run}"
        create_topic(bootstrap, topic)
        figures.setdefault(("produce", "confluent-kafka acks=1", name), []).append(
            confluent_produce(bootstrap, topic, args.records))
        figures.setdefault(("consume", "kafka-consumer-perf-test", name), []).append(
            perf_consume(bootstrap, f"perf-1-{run}", args.records))
        figures.setdefault(("consume", "confluent-kafka", name), []).append(
            confluent_consume(bootstrap, topic, args.records))
        times = lookup_times(bootstrap, topic, args.lookups, run)
        figures.setdefault(("lookup", "confluent-kafka offsets_for_times", name), []).append(
            confluent_lookups(bootstrap, topic, times))
        if name == "tslog":
            figures.setdefault(("lookup", "tslog Consumer, native port", name), []).append(
                tslog_lookups(native, topic, times))
    topic = f"native-{run}"
    create_topic(tslog_kafka, topic)
    figures.setdefault(("produce", "tslog Producer.send_batch, native port", "tslog"),
                       []).append(tslog_produce(native, topic, args.records))


def rows_of(figures: dict) -> list[list[str]]:
    rows = []
    keys = sorted({(op, path) for op, path, _ in figures}, key=lambda k: (k[0] != "produce",
                                                                         k[0], k[1]))
    for op, path in keys:
        kafka, tslog = figures.get((op, path, "kafka")), figures.get((op, path, "tslog"))
        if op == "lookup":
            cells = []
            for runs in (kafka, tslog):
                if runs is None:
                    cells.append("-")
                    continue
                p50s, p99s, _ = lookup_stats(runs)
                cells.append(f"p50 {spread(p50s, 1e6)} / p99 {spread(p99s, 1e6)} us")
            rows.append([op, path, *cells, ratio(median(lookup_stats(tslog)[1]),
                                                 median(lookup_stats(kafka)[1]))
                         if kafka and tslog else "-"])
            continue
        rows.append([op, path, spread(kafka) if kafka else "-", spread(tslog) if tslog else "-",
                     ratio(median(tslog), median(kafka)) if kafka and tslog else "-"])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--lookups", type=int, default=2000)
    args = parser.parse_args(argv)
    # SIGTERM ends the run through the finally below, which stops both brokers by pid
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as scratch:
        kafka, tslog, tslog_kafka, started = start_both(Path(scratch))
        try:
            figures: dict = {}
            for run in range(args.runs):
                one_run(run, args, kafka.bootstrap, tslog_kafka, tslog.bootstrap, figures)
            memory = {"kafka": rss_mb(kafka.process.pid), "tslog": rss_mb(tslog.process.pid)}
        finally:
            kafka.stop()
            tslog.stop()
    rows = rows_of(figures)
    rows.append(["broker", "RSS after the runs (MB)", f"{memory['kafka']:,.0f}",
                 f"{memory['tslog']:,.0f}", ratio(memory["tslog"], memory["kafka"])])
    rows.append(["broker", "launch to serving (s)", f"{started['kafka']:.1f}",
                 f"{started['tslog']:.1f}", ratio(started["tslog"], started["kafka"])])
    print_table(f"Apache Kafka 4.4 and tslog, {args.records:,} records of 100 B, "
                f"{args.runs} runs (records/s unless said)",
                ["op", "path", "Apache Kafka", "tslog", "tslog / Kafka"], rows,
                notes=["lookup ratio: p99 over p99", "Kafka's launch includes formatting "
                       "its storage (one JVM) and starting the broker (another)"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
