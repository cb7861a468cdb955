"""The web console on a 1,000-partition topic: how long each page takes to render, the 24-hour
traffic chart, and find by time. Prints a table with the targets beside the figures; asserts
nothing.

    python bench/console.py                   # 1,000 partitions, 24 records each
    python bench/console.py --partitions 50 --runs 2    # a smoke run

The data: one topic whose records carry CreateTimes spread over the last 24 hours (one batch
per partition per hour), so the chart by CreateTime has a bar per hour; a group with committed
offsets on every partition, all lagging. A real ``tslog-broker`` and a real ``tslog console``
run on free loopback ports (``tests/helpers``); each figure is the median (min-max) of
``--runs`` timed GETs from this process, after one untimed warm-up GET per page, with the
requests the page cost the broker (its own ``tslog_requests_total``, per GET): counts are the
honest measure on a shared machine, where times move with the load.

A second table compares, in the same invocation and rotating which goes first, three ways
to ask a chart's bucket edges through the client: one ListOffsets per edge (all in flight, as
the console did before OffsetsAtTimes), one ``Admin.offsets_at_times`` for every edge (an
answer object per edge), and one ``Admin.offset_columns`` (the same request, each
partition's offsets as sent: what the console uses now).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from bench.broker_bench.common import median, print_table, ratio, spread  # noqa: E402
from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402
from tests.helpers.console_process import ConsoleProcess  # noqa: E402
from tslog.client import Admin, Producer, TopicPartition  # noqa: E402
from tslog.client.aio import AsyncAdmin  # noqa: E402

HOUR_MS = 3_600_000
GET_TIMEOUT_S = 600.0  # what is measured: a loaded machine may take long, report it anyway
TOPIC = "traffic"


def load(broker: BrokerProcess, partitions: int) -> None:
    """One record per partition per hour of the last day, by CreateTime; a lagging group."""
    with Admin(broker.bootstrap) as admin:
        # exist_ok: on a loaded machine the first CreateTopics may time out after it created
        # the topic, and the admin's retry would then be refused
        admin.create_topic(TOPIC, partitions=partitions, exist_ok=True)
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


def requests_by_api(metrics_url: str) -> dict[str, float]:
    with urllib.request.urlopen(metrics_url, timeout=30) as response:
        text = response.read().decode()
    return {sample.labels["api"]: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "tslog_requests_total"}


def timed(console: ConsoleProcess, path: str, runs: int, metrics_url: str):
    """([seconds per GET], "api xN, ..." requests per GET)."""
    print(f"GET {path}", file=sys.stderr, flush=True)
    status, _ = console.get(path, timeout_s=GET_TIMEOUT_S)  # warm-up: connections, Metadata
    if status != 200:
        raise RuntimeError(f"GET {path}: {status}")
    seconds = []
    before = requests_by_api(metrics_url)
    for _ in range(runs):
        started = time.perf_counter()
        status, _ = console.get(path, timeout_s=GET_TIMEOUT_S)
        seconds.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"GET {path}: {status}")
    after = requests_by_api(metrics_url)
    grew = {api: (after[api] - before.get(api, 0)) / runs for api in sorted(after)}
    return seconds, ", ".join(f"{api} x{count:g}" for api, count in grew.items() if count)


def measure(console: ConsoleProcess, runs: int, metrics_url: str) -> list[list[str]]:
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
    rows = []
    for name, path, target in pages:
        seconds, requests = timed(console, path, runs, metrics_url)
        rows.append([name, spread(seconds, scale=1e3, digits=1), target, requests])
    return rows


async def _edges_three_ways(bootstrap: str, partitions: int, edges: list, time_type: str,
                            runs: int) -> dict:
    """{way: [seconds per chart]}: one ListOffsets per edge (all in flight), one
    offsets_at_times, one offset_columns, rotating which goes first; the answers are
    checked to agree."""
    tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
    ways = ("edge", "once", "columns")
    seconds: dict = {way: [] for way in ways}
    async with AsyncAdmin(bootstrap) as admin:
        for run in range(runs + 1):  # run 0 warms up and checks
            answers = {}
            for way in ways[run % 3:] + ways[:run % 3]:
                started = time.perf_counter()
                answers[way] = await _edges_one_way(admin, way, tps, edges, time_type)
                if run:
                    seconds[way].append(time.perf_counter() - started)
            if answers["edge"] != answers["once"] or answers["columns"] != {
                    tp: [a.offset if a is not None else -1 for a in found]
                    for tp, found in answers["once"].items()}:
                raise RuntimeError("ListOffsets, OffsetsAtTimes and offset_columns disagree")
    return seconds


async def _edges_one_way(admin: AsyncAdmin, way: str, tps: list, edges: list,
                         time_type: str) -> dict:
    if way == "edge":
        found = await asyncio.gather(*(admin.list_offsets({tp: edge for tp in tps}, time_type)
                                       for edge in edges))
        return {tp: [f[tp] for f in found] for tp in tps}
    if way == "once":
        return await admin.offsets_at_times({tp: edges for tp in tps}, time_type)
    return await admin.offset_columns(tps, edges, time_type)


def compare_edges(bootstrap: str, partitions: int, runs: int) -> list[list[str]]:
    now_ms = time.time_ns() // 1_000_000
    charts = [("24 h by hour, LogAppendTime", HOUR_MS, 24, "append"),
              ("24 h by hour, CreateTime", HOUR_MS, 24, "create"),
              ("1 h by minute, LogAppendTime", 60_000, 60, "append")]
    rows = []
    for name, bucket_ms, buckets, time_type in charts:
        last = now_ms - now_ms % bucket_ms + bucket_ms
        edges = [last - (buckets - i) * bucket_ms for i in range(buckets + 1)]
        seconds = asyncio.run(_edges_three_ways(bootstrap, partitions, edges, time_type, runs))
        per_edge, at_once, columns = seconds["edge"], seconds["once"], seconds["columns"]
        rows.append([name, f"{len(edges)} ListOffsets", spread(per_edge, 1e3, 1),
                     spread(at_once, 1e3, 1), spread(columns, 1e3, 1),
                     ratio(median(per_edge), median(at_once)),
                     ratio(median(at_once), median(columns))])
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", help="parent of the temporary data directory")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="tslog-console-bench-", dir=args.dir))
    metrics = f"127.0.0.1:{free_port()}"
    broker = BrokerProcess(work / "broker", args=["--log-level", "WARNING"],
                           config={"metrics_listen": metrics})
    console = None
    try:
        broker.start()
        load(broker, args.partitions)
        console = ConsoleProcess(broker.bootstrap, work)
        rows = measure(console, args.runs, f"http://{metrics}/metrics")
        load_note = (f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (a "
                     "shared machine's times move with it; the request counts do not)")
        print_table(f"tslog console, one topic of {args.partitions:,} partitions x 24 records "
                    f"(ms, median (min-max) of {args.runs})",
                    ["page", "ms", "target", "broker requests per GET"], rows,
                    notes=["each GET from this process over loopback, HTML fully read",
                           load_note])
        edges = compare_edges(broker.bootstrap, args.partitions, args.runs)
        print_table(f"a chart's bucket edges of {args.partitions:,} partitions through the "
                    f"client, three ways in rotation (ms, median (min-max) of {args.runs})",
                    ["chart", "per edge", "ms", "offsets_at_times ms", "offset_columns ms",
                     "per edge / at_times", "at_times / columns"], edges,
                    notes=[f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"])
    finally:
        if console is not None:
            console.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
