"""Spark read throughput: format("tslog") from a timestamp vs the same records from Parquet.

    .venv/bin/python bench/spark.py            # 10^6 and 10^7 records, median of 5 runs
    .venv/bin/python bench/spark.py --quick    # 2x10^5 records, 2 runs

What it does, per size N: starts a broker (a real ``tslog-broker`` subprocess on a free
loopback port, data in a temporary directory), creates a topic with ``--partitions``
partitions, produces a prefix of records, notes a time T, then produces N records after T
(pre-built batches sent as raw Produce requests, several in flight, so 10^7 records take
seconds). Spark (``local[2]``) then reads the records from T:

    spark.read.format("tslog").option("startingTimestamp", T)...write.format("noop")

and, in the same run, the same N records from a local Parquet file that Spark wrote from
them (snappy, Spark's default), with the same ``noop`` action (``count()`` would let Parquet
answer from metadata). Rows per second are N / wall time of the action; the table shows the
median and best of ``--runs`` runs after one warm-up, and the ratios to Parquet and to the
ceiling. The ceiling is a Python data source that yields pre-built Arrow batches of the same
schema and size (one 8 MiB Fetch response's worth of rows) with no I/O at all: what PySpark's
Python data source path can carry on this machine at this moment; the target is tslog >= 0.9
of it. The last row is the connector's fetch + decode path without Spark (one Python process
reading every range in turn).

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

from bench.storage import print_table  # noqa: E402  (one table printer for the benches)
from tests.helpers.broker_process import BrokerProcess  # noqa: E402
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


def make_batches(count: int, value_bytes: int) -> list[bytes]:
    """A few distinct pre-built batches (key ~10 B, value ``value_bytes`` B)."""
    batches = []
    for b in range(4):
        base = b * RECORDS_PER_BATCH
        values = [(b"v%09d" % (base + i)).ljust(value_bytes, b"x") for i in range(count)]
        keys = [b"key-%06d" % ((base + i) % 1_000_000) for i in range(count)]
        batches.append(build_batch(values, keys=keys))
    return batches


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


def start_spark():
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
    args = parser.parse_args()
    sizes = [200_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 2 if args.quick else args.runs
    prefix = 20_000 if args.quick else args.prefix

    root = Path(tempfile.mkdtemp(prefix="tslog-bench-spark-"))
    broker = BrokerProcess(root / "data")
    broker.start()
    spark = None
    results = []
    summary = []
    try:
        spark = start_spark()
        batches = make_batches(RECORDS_PER_BATCH, args.value_bytes)
        for n in sizes:
            topic = f"bench-{n}"
            with Admin(broker.bootstrap) as admin:
                admin.create_topic(topic, partitions=args.partitions)
            produce(broker.port, topic, args.partitions, prefix, batches)
            time.sleep(0.005)
            start_ms = now_ms()
            time.sleep(0.005)
            produced = time.perf_counter()
            produce(broker.port, topic, args.partitions, n, batches)
            produce_s = time.perf_counter() - produced
            n = (n // args.partitions) * args.partitions

            def tslog_df():
                return (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
                        .option("topic", topic).option("startingTimestamp", str(start_ms))
                        .load())

            parquet_path = root / f"parquet-{n}"
            tslog_df().write.parquet(str(parquet_path))
            assert spark.read.parquet(str(parquet_path)).count() == n

            def read_tslog():
                tslog_df().write.format("noop").mode("overwrite").save()

            def read_parquet():
                spark.read.parquet(str(parquet_path)).write.format("noop") \
                    .mode("overwrite").save()

            spark.dataSource.register(ceiling_source(n // 2, topic, args.value_bytes))

            def read_ceiling():
                spark.read.format("tslog_bench_ceiling").load().write.format("noop") \
                    .mode("overwrite").save()

            read_tslog()  # warm-up: Python workers, JIT of the plan
            read_parquet()
            read_ceiling()
            tslog_times, parquet_times, ceiling_times = [], [], []
            for _ in range(runs):  # interleaved, so background load hits all alike
                tslog_times.append(timed(read_tslog))
                parquet_times.append(timed(read_parquet))
                ceiling_times.append(timed(read_ceiling))
            decode_s, decoded = decode_only(broker.bootstrap, topic, start_ms)
            assert decoded == n, (decoded, n)
            t_rate = statistics.median(n / t for t in tslog_times)
            p_rate = statistics.median(n / t for t in parquet_times)
            c_rate = statistics.median(n / t for t in ceiling_times)
            results.append(row('format("tslog") from a timestamp', n, tslog_times)
                           + [f"{t_rate / p_rate:.2f}", f"{t_rate / c_rate:.2f}"])
            results.append(row("Parquet, same records", n, parquet_times)
                           + ["1.00", f"{p_rate / c_rate:.2f}"])
            results.append(row("Python source ceiling (pre-built Arrow)", n, ceiling_times)
                           + [f"{c_rate / p_rate:.2f}", "1.00"])
            results.append(row("connector read path, no Spark", n, [decode_s]) + ["-", "-"])
            summary.append((n, t_rate, c_rate, produce_s))
            shutil.rmtree(parquet_path, ignore_errors=True)
    finally:
        if spark is not None:
            spark.stop()
        broker.cleanup()
        shutil.rmtree(root, ignore_errors=True)

    print_table(f"Spark local[2] reads, noop sink, median/best of {runs} runs "
                f"({args.partitions} topic partitions, value {args.value_bytes} B, key 10 B)",
                ["reader", "records", "median rows/s", "best rows/s", "median time",
                 "ratio to Parquet", "ratio to ceiling"], results)
    for n, t_rate, c_rate, produce_s in summary:
        verdict = "meets" if t_rate >= 0.9 * c_rate else "below"
        print(f"  {n:,} records: tslog/ceiling = {t_rate / c_rate:.2f} ({verdict} the 0.9 "
              f"target); produced in {produce_s:.1f} s ({n / produce_s / 1e6:.2f} M rec/s)")
    print(f"  load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
