"""The web console on a 1,000-partition topic: how long each page takes to render, the 24-hour
traffic chart, and find by time. Prints a table with the targets beside the figures; asserts
nothing.

    python bench/console.py                   # 1,000 partitions, 24 records each
    python bench/console.py --partitions 50 --runs 2    # a smoke run

The data: one topic whose records carry CreateTimes spread over the last 24 hours (one batch
per partition per hour), so the chart by CreateTime has a bar per hour; a group with committed
offsets on every partition, all lagging. A real ``tslog-broker`` and a real ``tslog console``
run on free loopback ports (``tests/helpers``); each figure is the median (min-max) of
``--runs`` timed GETs from this process, after one untimed warm-up GET per page.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from bench.broker_bench.common import print_table, spread  # noqa: E402
from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tests.helpers.console_process import ConsoleProcess  # noqa: E402
from tslog.client import Admin, Producer, TopicPartition  # noqa: E402

HOUR_MS = 3_600_000
GET_TIMEOUT_S = 600.0  # what is measured: a loaded machine may take long, report it anyway
TOPIC = "traffic"


def load(broker: BrokerProcess, partitions: int) -> None:
    """One record per partition per hour of the last day, by CreateTime; a lagging group."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=partitions)
    now_ms = time.time_ns() // 1_000_000
    with Producer(broker.bootstrap, acks=1, linger_ms=5) as producer:
        futures = [producer.send_batch(TOPIC, [b'{"hour": %d}' % hour], partition=partition,
                                       timestamp_ms=now_ms - (24 - hour) * HOUR_MS)
                   for hour in range(24) for partition in range(partitions)]
        producer.flush()
        for future in futures:
            future.get(60)
    with Admin(broker.bootstrap) as admin:
        admin.alter_consumer_group_offsets(
            "readers", {TopicPartition(TOPIC, p): 12 for p in range(partitions)})


def timed(console: ConsoleProcess, path: str, runs: int) -> list[float]:
    print(f"GET {path}", file=sys.stderr, flush=True)
    status, _ = console.get(path, timeout_s=GET_TIMEOUT_S)  # warm-up: connections, Metadata
    if status != 200:
        raise RuntimeError(f"GET {path}: {status}")
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        status, _ = console.get(path, timeout_s=GET_TIMEOUT_S)
        seconds.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status}")
    return seconds


def measure(console: ConsoleProcess, runs: int) -> list[list[str]]:
    pages = [
        ("cluster page", "/", "<= 200"),
        ("topics page", "/topics", "<= 200"),
        ("topic page, last hour by minute", f"/topics/{TOPIC}", "<= 200"),
        ("groups page", "/groups", "<= 200"),
        ("group page: lag in records and seconds", "/groups/readers", "<= 200"),
        ("24-hour chart by hour, LogAppendTime (topic page)", f"/topics/{TOPIC}?from=-24h",
         "<= 1000"),
        ("24-hour chart by hour, CreateTime (topic page)",
         f"/topics/{TOPIC}?from=-24h&time_type=create", "<= 1000"),
        ("find by time, every partition", f"/find?topic={TOPIC}&time=-12h", "<= 100"),
        ("find by time, one partition", f"/find?topic={TOPIC}&time=-12h&partition=0&limit=10",
         "<= 100"),
        ("find by CreateTime, one partition",
         f"/find?topic={TOPIC}&time=-12h&time_type=create&partition=0&limit=10", "<= 100"),
        ("find by offset", f"/find?topic={TOPIC}&partition=0&offset=5&limit=10", "<= 100"),
    ]
    return [[name, spread(timed(console, path, runs), scale=1e3, digits=1), target]
            for name, path, target in pages]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", help="parent of the temporary data directory")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tslog-console-bench-", dir=args.dir))
    broker = BrokerProcess(work / "broker", args=["--log-level", "WARNING"])
    console = None
    try:
        broker.start()
        load(broker, args.partitions)
        console = ConsoleProcess(broker.bootstrap, work)
        rows = measure(console, args.runs)
        print_table(f"tslog console, one topic of {args.partitions:,} partitions x 24 records "
                    f"(ms, median (min-max) of {args.runs})", ["page", "ms", "target"], rows,
                    notes=["each GET from this process over loopback, HTML fully read",
                           f"load average at the end: {os.getloadavg()[0]:.1f} on "
                           f"{os.cpu_count()} CPUs (a shared machine's figures move with it)"])
    finally:
        if console is not None:
            console.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
