"""Spark read throughput: format("tslog") from a timestamp vs Spark's Kafka source and Parquet.

    .venv/bin/python bench/spark.py            # 10^6 and 10^7 records, median of 5 runs
    .venv/bin/python bench/spark.py --quick    # 2x10^5 records, 2 runs

What it does, per size N: starts a broker (a real ``tslog-broker`` subprocess on a free
loopback port, data in a temporary directory), creates a topic with ``--partitions``
partitions, produces a prefix of records, notes a time T, then produces N records after T
(pre-built batches sent as raw Produce requests, several in flight, so 10^7 records take
seconds). Spark (``local[2]``) then reads the records from T:

    spark.read.format("tslog").option("startingTimestamp", T)...write.format("noop")

and, in the same run, the same range through Spark's own Kafka source
(``spark.read.format("kafka")`` with ``startingTimestamp``, ``spark-sql-kafka-0-10`` fetched
by mvn: tests/kafka_reference/spark/pom.xml) twice: from tslog's Kafka listener, and from a
reference Apache Kafka 4.4 (one KRaft node, tests/helpers/kafka_reference.py) loaded with
the same records as Kafka batches (same partitions, keys and values; LogAppendTime on both,
so both look the time up in their own append-time index); and the same N records from a
local Parquet file that Spark wrote from them (snappy, Spark's default), with the same
``noop`` action (``count()`` would let Parquet answer from metadata). Each reader runs with
the broker it does not read paused (SIGSTOP, bench/kafka_side/alone.py); ``--no-kafka``
leaves the two Kafka-source rows out (no Java tools needed beyond Spark's). Rows per second
are N / wall time of the action; the table shows the median and best of ``--runs`` runs
after one warm-up, and the ratios to Parquet and to the ceiling. The ceiling is a Python
data source that yields pre-built Arrow batches of the same schema and size (one 8 MiB Fetch
response's worth of rows) with no I/O at all: what PySpark's Python data source path can
carry on this machine at this moment; the target is tslog >= 0.9 of it. The last row is the
connector's fetch + decode path without Spark (one Python process reading every range in
turn).

It prints tables; it asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.kafka_side import clients, raw_kafka  # noqa: E402
from bench.kafka_side.alone import PAUSABLE_KAFKA, alone  # noqa: E402
from bench.storage import print_table  # noqa: E402  (one table printer for the benches)
from tests.helpers import kafka_reference as ref  # noqa: E402
from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402
from tslog.client import Admin  # noqa: E402
from tslog.client.blocking import BrokerSocket  # noqa: E402
from tslog.protocol.messages import ApiKey  # noqa: E402
from tslog.protocol.records import build_batch  # noqa: E402

RECORDS_PER_BATCH = 8192


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class RawProducer:
    """Pipelined raw Produce requests of pre-built batches (acks=1), over the blocking shell
    of the protocol core (``BrokerSocket``): requests go out at once, answers are read when
    ``in_flight`` are outstanding."""

    def __init__(self, host: str, port: int, in_flight: int = 8) -> None:
        self.connection = BrokerSocket(host, port, 30.0, "bench-spark")
        self.in_flight = in_flight
        self.pending = 0

    def _collect(self) -> None:
        body = self.connection.receive()
        for topic in body["topics"]:
            for part in topic["partitions"]:
                if part["error_code"]:
                    raise RuntimeError(f"produce failed: {part}")
        self.pending -= 1

    def send(self, topic: str, partition: int, batch: bytes) -> None:
        while self.pending >= self.in_flight:
            self._collect()
        self.connection.send(ApiKey.PRODUCE, {
            "acks": 1, "timeout_ms": 30_000,
            "topics": [{"topic": topic, "partitions": [{"partition": partition,
                                                        "records": batch}]}]})
        self.pending += 1

    def flush(self) -> None:
        while self.pending:
            self._collect()

    def close(self) -> None:
        self.flush()
        self.connection.close()


def batch_records(number: int, count: int, value_bytes: int) -> tuple[list, list]:
    """The values and keys of pre-built batch ``number`` (key ~10 B, value ``value_bytes``)."""
    base = number * RECORDS_PER_BATCH
    values = [(b"v%09d" % (base + i)).ljust(value_bytes, b"x") for i in range(count)]
    keys = [b"key-%06d" % ((base + i) % 1_000_000) for i in range(count)]
    return values, keys


def make_batches(count: int, value_bytes: int) -> list[bytes]:
    """A few distinct pre-built tslog batches."""
    return [build_batch(values, keys=keys)
            for values, keys in (batch_records(b, count, value_bytes) for b in range(4))]


def make_kafka_batches(count: int, value_bytes: int) -> list[bytes]:
    """The same records as ``make_batches``, as Kafka RecordBatch v2 (the topic stamps
    LogAppendTime over the CreateTime given here)."""
    from tslog.protocol.kafka.record_batch import encode_batch
    return [encode_batch(values, keys, now_ms())
            for values, keys in (batch_records(b, count, value_bytes) for b in range(4))]


def produce_kafka(bootstrap: str, topic: str, partitions: int, records: int,
                  batches: list[bytes]) -> None:
    """``produce`` to Apache Kafka: the same batches to the same partitions, in order."""
    from tslog.protocol.kafka.record_batch import encode_batch
    full, rest = divmod(records // partitions, RECORDS_PER_BATCH)
    plan = [(p, batches[(i + p) % len(batches)]) for i in range(full) for p in range(partitions)]
    if rest:
        tail = encode_batch([b"tail-%d" % i for i in range(rest)], None, now_ms())
        plan += [(p, tail) for p in range(partitions)]
    raw_kafka.produce_batches(bootstrap, topic, plan)


def produce(bootstrap_port: int, topic: str, partitions: int, records: int,
            batches: list[bytes]) -> None:
    producer = RawProducer("127.0.0.1", bootstrap_port)
    per_partition = records // partitions
    full, rest = divmod(per_partition, RECORDS_PER_BATCH)
    tail = build_batch([b"tail-%d" % i for i in range(rest)]) if rest else None
    try:
        for i in range(full):
            for p in range(partitions):
                producer.send(topic, p, batches[(i + p) % len(batches)])
        if tail:
            for p in range(partitions):
                producer.send(topic, p, tail)
    finally:
        producer.close()


def start_spark(jars: str = ""):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    paths = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # loopback only, whatever the hostname says
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("tslog-bench-spark")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.jars", jars)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ceiling_source(rows_per_task: int, topic: str, value_bytes: int):
    """A Python data source yielding pre-built Arrow batches of our exact schema (no I/O, no
    decoding): the most any Python data source can feed Spark on this machine right now."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class CeilingReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(i) for i in range(2)]

        def read(self, partition):
            from tslog.protocol.records import decode_batches
            from tslog.spark_connector._arrow import arrow_schema, build_record_batch

            raw = make_batches(RECORDS_PER_BATCH, value_bytes)  # the records produced
            columns = decode_batches([raw[i % len(raw)] for i in range(20)])
            batch = build_record_batch(columns, 0, columns.row_count, topic, partition.value,
                                       False, arrow_schema(False))
            left = rows_per_task
            while left > 0:
                piece = batch if left >= batch.num_rows else batch.slice(0, left)
                left -= piece.num_rows
                yield piece

    class CeilingSource(DataSource):
        @classmethod
        def name(cls):
            return "tslog_bench_ceiling"

        def schema(self):
            from tslog.spark_connector import spark_schema
            return spark_schema(False)

        def reader(self, schema):
            return CeilingReader()

    return CeilingSource


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def decode_only(bootstrap: str, topic: str, start_ms: int) -> float:
    """Seconds for one Python process to run the connector's read path over every range."""
    from tslog.spark_connector.datasource import TslogDataSource, _read

    source = TslogDataSource({"bootstrap": bootstrap, "topic": topic,
                              "startingTimestamp": str(start_ms)})
    parts = source.reader(source.schema()).partitions()
    started = time.perf_counter()
    rows = 0
    for part in parts:
        for batch in _read(part):
            rows += batch.num_rows
    return time.perf_counter() - started, rows


def row(label, n, times):
    rates = [n / t for t in times]
    return [label, f"{n:,}", f"{statistics.median(rates) / 1e6:.2f} M",
            f"{max(rates) / 1e6:.2f} M", f"{statistics.median(times):.2f} s"]


def start_kafka(root: Path, skip: bool):
    """(the reference Kafka, the jars of Spark's Kafka source), or (None, why not)."""
    if skip:
        return None, "--no-kafka"
    try:
        source_jars = ",".join(str(jar) for jar in sorted(ref.jars("spark").glob("*.jar")))
        ref.jars("broker")
        kafka = ref.KafkaReference(root / "kafka", as_scripts=True, config=PAUSABLE_KAFKA)
        kafka.start()
    except ref.ReferenceUnavailable as exc:
        return None, str(exc)
    return kafka, source_jars


def load(broker, kafka, topic: str, n: int, args, prefix: int, batches: dict) -> tuple:
    """``prefix`` records, then a start time, then ``n`` records, into tslog (and Kafka):
    ({side: start time in ms}, seconds tslog took for the ``n``)."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=args.partitions)
    produce(broker.port, topic, args.partitions, prefix, batches["tslog"])
    time.sleep(0.005)
    starts = {"tslog": now_ms()}
    time.sleep(0.005)
    produced = time.perf_counter()
    produce(broker.port, topic, args.partitions, n, batches["tslog"])
    produce_s = time.perf_counter() - produced
    if kafka is not None:
        clients.create_topic(kafka.bootstrap, topic, partitions=args.partitions)
        produce_kafka(kafka.bootstrap, topic, args.partitions, prefix, batches["kafka"])
        time.sleep(0.005)
        starts["kafka"] = now_ms()
        time.sleep(0.005)
        produce_kafka(kafka.bootstrap, topic, args.partitions, n, batches["kafka"])
    return starts, produce_s


def kafka_source(spark, bootstrap: str, topic: str, start_ms: int):
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingTimestamp", str(start_ms)).load())


def noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def tslog_source(spark, bootstrap: str, topic: str, start_ms: int):
    return (spark.read.format("tslog").option("bootstrap", bootstrap).option("topic", topic)
            .option("startingTimestamp", str(start_ms)).load())


def readers(spark, bootstrap: str, tslog_kafka: str, kafka, topic: str, starts: dict,
            parquet_path: Path) -> list:
    """(label, the broker it reads or None, the action) for every reader of the range."""
    found = [('format("tslog") from a timestamp', "tslog",
              lambda: noop(tslog_source(spark, bootstrap, topic, starts["tslog"])))]
    if kafka is not None:
        on_tslog = kafka_source(spark, tslog_kafka, topic, starts["tslog"])
        on_kafka = kafka_source(spark, kafka.bootstrap, topic, starts["kafka"])
        found += [("Spark's Kafka source on tslog", "tslog", lambda: noop(on_tslog)),
                  ("Spark's Kafka source on Apache Kafka", "kafka", lambda: noop(on_kafka))]
    found += [("Parquet, same records", None,
               lambda: noop(spark.read.parquet(str(parquet_path)))),
              ("Python source ceiling (pre-built Arrow)", None,
               lambda: noop(spark.read.format("tslog_bench_ceiling").load()))]
    return found


def check_counts(spark, tslog_kafka: str, kafka, topic: str, starts: dict, n: int) -> None:
    """Spark's Kafka source sees exactly the ``n`` records after the start time, on both."""
    if kafka is None:
        return
    for bootstrap, side in ((tslog_kafka, "tslog"), (kafka.bootstrap, "kafka")):
        got = kafka_source(spark, bootstrap, topic, starts[side]).count()
        assert got == n, (side, got, n)


def measure(found: list, runs: int, solo) -> dict:
    """Seconds per run for each reader after one warm-up each; interleaved, so background
    load hits all alike."""
    for _, side, action in found:
        with solo(side):
            action()
    times: dict = {label: [] for label, _, _ in found}
    for _ in range(runs):
        for label, side, action in found:
            with solo(side):
                times[label].append(timed(action))
    return times


def table_rows(times: dict, n: int) -> list:
    rate = {label: statistics.median(n / t for t in runs) for label, runs in times.items()}
    parquet = rate["Parquet, same records"]
    ceiling = rate["Python source ceiling (pre-built Arrow)"]
    return [row(label, n, runs) + [f"{rate[label] / parquet:.2f}", f"{rate[label] / ceiling:.2f}"]
            for label, runs in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2x10^5 records, 2 runs")
    parser.add_argument("--sizes", default="1000000,10000000",
                        help="comma list of record counts (default 10^6,10^7)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--value-bytes", type=int, default=20)
    parser.add_argument("--prefix", type=int, default=100_000,
                        help="records produced before the start time (not read)")
    parser.add_argument("--no-kafka", action="store_true",
                        help="leave out Spark's Kafka source (and the reference Kafka)")
    args = parser.parse_args()
    sizes = [200_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 2 if args.quick else args.runs
    prefix = 20_000 if args.quick else args.prefix

    root = Path(tempfile.mkdtemp(prefix="tslog-bench-spark-"))
    tslog_kafka = f"127.0.0.1:{free_port()}"
    broker = BrokerProcess(root / "data", args=["--kafka-listen", tslog_kafka])
    broker.start()
    kafka, jars_or_reason = start_kafka(root, args.no_kafka)
    spark = None
    results, summary = [], []
    try:
        spark = start_spark(jars_or_reason if kafka is not None else "")
        pids = {"tslog": broker.process.pid}
        kafka_ports = {"tslog": tslog_kafka}  # each broker's Kafka listener, for the probes
        if kafka is not None:
            pids["kafka"] = kafka.process.pid
            kafka_ports["kafka"] = kafka.bootstrap
        batches = {"tslog": make_batches(RECORDS_PER_BATCH, args.value_bytes)}
        if kafka is not None:
            batches["kafka"] = make_kafka_batches(RECORDS_PER_BATCH, args.value_bytes)
        for n in sizes:
            topic = f"bench-{n}"
            starts, produce_s = load(broker, kafka, topic, n, args, prefix, batches)
            n = (n // args.partitions) * args.partitions
            def solo(side, topic=topic):
                return alone(side, pids, {name: (bootstrap, topic)
                                          for name, bootstrap in kafka_ports.items()})

            parquet_path = root / f"parquet-{n}"
            tslog_source(spark, broker.bootstrap, topic, starts["tslog"]) \
                .write.parquet(str(parquet_path))
            assert spark.read.parquet(str(parquet_path)).count() == n
            check_counts(spark, tslog_kafka, kafka, topic, starts, n)
            spark.dataSource.register(ceiling_source(n // 2, topic, args.value_bytes))
            found = readers(spark, broker.bootstrap, tslog_kafka, kafka, topic, starts,
                            parquet_path)
            times = measure(found, runs, solo)
            decode_s, decoded = decode_only(broker.bootstrap, topic, starts["tslog"])
            assert decoded == n, (decoded, n)
            results += table_rows(times, n)
            results.append(row("connector read path, no Spark", n, [decode_s]) + ["-", "-"])
            summary.append((n, times, produce_s))
            shutil.rmtree(parquet_path, ignore_errors=True)
    finally:
        if spark is not None:
            spark.stop()
        if kafka is not None:
            kafka.stop()
        broker.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    print_results(results, summary, runs, args, None if kafka is not None else jars_or_reason)


def print_results(results: list, summary: list, runs: int, args, no_kafka: str | None) -> None:
    print_table(f"Spark local[2] reads, noop sink, median/best of {runs} runs "
                f"({args.partitions} topic partitions, value {args.value_bytes} B, key 10 B)",
                ["reader", "records", "median rows/s", "best rows/s", "median time",
                 "ratio to Parquet", "ratio to ceiling"], results)
    for n, times, produce_s in summary:
        rate = {label: statistics.median(n / t for t in runs) for label, runs in times.items()}
        tslog, ceiling = rate['format("tslog") from a timestamp'], \
            rate["Python source ceiling (pre-built Arrow)"]
        verdict = "meets" if tslog >= 0.9 * ceiling else "below"
        print(f"  {n:,} records: tslog/ceiling = {tslog / ceiling:.3f} ({verdict} the 0.9 "
              f"target); produced in {produce_s:.1f} s ({n / produce_s / 1e6:.2f} M rec/s)")
        on_kafka = rate.get("Spark's Kafka source on Apache Kafka")
        if on_kafka:
            on_tslog = rate["Spark's Kafka source on tslog"]
            print(f"  {n:,} records: Spark's Kafka source, tslog / Apache Kafka = "
                  f"{on_tslog / on_kafka:.2f}; format(\"tslog\") / Kafka source on Apache "
                  f"Kafka = {tslog / on_kafka:.2f}")
    if no_kafka:
        print(f"  Spark's Kafka source rows left out: {no_kafka}")
    print("  each reader ran with the broker it does not read paused (SIGSTOP)")
    print(f"  load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
