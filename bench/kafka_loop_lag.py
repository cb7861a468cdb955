"""Event-loop lag of a real broker while a Kafka consumer reads large Fetch responses.

    python bench/kafka_loop_lag.py
    python bench/kafka_loop_lag.py --broker before=/tmp/old/.venv/bin/python --broker after=python

Starts ``tslog-broker`` with a Kafka listener under ``bench/loop_probe.py`` (a timer due
every ms on the loop notes how late it ran), fills a topic through tslog's own client (batches of 1000 records of 100
bytes), then has a confluent-kafka consumer read it all with ``fetch.max.bytes`` and
``max.partition.fetch.bytes`` of 8 MB, so each Fetch converts up to 8 MB of stored batches
into Kafka's format. The table gives the lag the probes saw during the read (p50, p99, max):
a conversion run on the loop shows as a max lag as long as the conversion. ``--broker``
takes LABEL=PYTHON as in ``bench/loop_stall.py``. Asserts nothing; a shared 2-core VM's
numbers vary from run to run: compare rows of one invocation.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loop_stall import PROBE, percentile  # noqa: E402
from bench.storage import print_table  # noqa: E402
from tests.helpers.broker_process import free_port, probe  # noqa: E402
from tslog.client import Admin, Producer  # noqa: E402

FETCH_BYTES = 8_000_000


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _fill(bootstrap: str, topic: str, batches: int) -> int:
    values = [b"v" * 100] * 1000
    with Producer(bootstrap) as producer:
        for _ in range(batches):
            producer.send_batch(topic, values, partition=0)
        producer.flush()
    return batches * len(values)


def _consume(kafka: str, topic: str, count: int) -> int:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "lag",
                         "enable.auto.commit": False, "fetch.max.bytes": FETCH_BYTES,
                         "max.partition.fetch.bytes": FETCH_BYTES,
                         "receive.message.max.bytes": FETCH_BYTES + 1_000_000,
                         # librdkafka stops fetching for this long when its queue is full
                         # (default 1000 ms): once the broker outruns the Python loop
                         # draining that queue, the default times librdkafka's pause.
                         "fetch.queue.backoff.ms": 10})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen, deadline = 0, time.monotonic() + 120
        while seen < count and time.monotonic() < deadline:
            seen += len(consumer.consume(10_000, 0.5))
        return seen
    finally:
        consumer.close()


def run(python: str, root: Path, batches: int) -> dict:
    samples_path = root / "samples.json"
    port, kafka_port = free_port(), free_port()
    command = [python, str(PROBE), str(samples_path), "--", "--data-dir", str(root / "data"),
               "--listen", f"127.0.0.1:{port}", "--kafka-listen", f"127.0.0.1:{kafka_port}",
               "--log-level", "WARNING"]
    with open(root / "broker.log", "ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not probe("127.0.0.1", port) or not _accepts(kafka_port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"broker did not start: see {root}")
            time.sleep(0.05)
        bootstrap = f"127.0.0.1:{port}"
        with Admin(bootstrap) as admin:
            admin.create_topic("lag", partitions=1, replication_factor=1)
        count = _fill(bootstrap, "lag", batches)
        time.sleep(0.5)
        started = time.time()
        seen = _consume(f"127.0.0.1:{kafka_port}", "lag", count)
        ended = time.time()
    finally:
        process.terminate()
        process.wait(60)
    lags = [lag for wall, lag in json.loads(samples_path.read_text())["samples"]
            if started <= wall <= ended]
    return {"lags": lags, "records_s": seen / (ended - started), "seen": seen, "count": count}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", action="append", default=[],
                        help="LABEL=PYTHON: a broker to measure (default: this interpreter)")
    parser.add_argument("--batches", type=int, default=300,
                        help="stored batches of 1000 records to read (300: about 36 MB)")
    parser.add_argument("--dir", default=None, help="where to put data (default: temp)")
    args = parser.parse_args(argv)
    brokers = [b.split("=", 1) for b in args.broker] or [["this tree", sys.executable]]
    rows = []
    for label, python in brokers:
        root = Path(tempfile.mkdtemp(prefix="tslog-kafka-lag-", dir=args.dir))
        try:
            result = run(python, root, args.batches)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        lags = result["lags"]
        rows.append([label, f"{result['seen']}/{result['count']}",
                     f"{result['records_s']:,.0f}", str(len(lags)),
                     *(f"{percentile(lags, q) * 1e3:.2f}" for q in (0.5, 0.99)),
                     f"{max(lags) * 1e3:.2f}"])
    print_table(f"Event-loop lag while confluent-kafka reads {args.batches} batches of 1000 "
                f"records (Fetch up to {FETCH_BYTES / 1e6:g} MB)",
                ["broker", "read", "records/s", "probes", "p50 ms", "p99 ms", "max ms"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
