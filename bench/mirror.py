"""Mirror benchmark: ``tslog mirror`` throughput against the target's raw produce rate, and
the mirror's lag under a steady produce rate.

Starts two ``tslog-broker`` processes (source, target; temporary data directories, free
127.0.0.1 ports) and runs ``tslog mirror`` as its own process, as an operator would; stops
everything by pid at the end, also on error. Per run:

- raw: ``Producer.send_batch`` of N records (100 B values, 1000 per call) into the target,
  records/s - the rate the target takes from one Python client;
- mirror: N records preloaded on the source, a mirror started on that topic; the rate is
  measured from the first record on the target to the last (process start-up excluded);
- lag: a producer writes ``--rate`` records/s (500 per call) to the source for
  ``--seconds`` while the mirror runs; lag of each record = its target LogAppendTime minus
  its CreateTime set by the source producer (the mirror keeps it in the reserved header
  ``tslog.mirror.create_time``), read back from the target; p50,
  p99 and max are printed.

Medians over ``--runs``; the targets (mirror >= 0.5x raw) are printed, not asserted. The
figures depend on the machine: the brokers, the mirror and the benchmark share the cores.

    python bench/mirror.py                 # 3 runs, 200,000 records, 50,000 records/s x 10 s
    python bench/mirror.py --quick         # a smoke run (seconds)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from bench.broker_bench.common import print_table  # noqa: E402
from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tslog.client import Admin, Consumer, Producer, TopicPartition  # noqa: E402

VALUE = b"x" * 100
CHUNK = 1000


def fill(bootstrap: str, topic: str, records: int) -> float:
    """Produce ``records`` into partition 0 of ``topic``; return records/s."""
    values = [VALUE] * CHUNK
    with Producer(bootstrap) as producer:
        producer.partitions_for(topic)
        started = time.perf_counter()
        futures = [producer.send_batch(topic, values[:min(CHUNK, records - done)], partition=0)
                   for done in range(0, records, CHUNK)]
        for future in futures:
            future.last(timeout=60)
        return records / (time.perf_counter() - started)


def producer_times(columns, start: int) -> np.ndarray:
    """The source producer's CreateTimes of records ``start`` on of a mirrored batch: the
    last reserved header (``tslog.mirror.create_time``); the target CreateTime is the
    source LogAppendTime (docs/mirror.md)."""
    return np.array([int.from_bytes(entry[-1][1], "big", signed=True)
                     for entry in columns.headers[start:]], dtype=np.int64)


def topic_exists(bootstrap: str, topic: str) -> bool:
    with Admin(bootstrap) as admin:
        return topic in admin.list_topics()


def end_offset(bootstrap: str, topic: str) -> int:
    if not topic_exists(bootstrap, topic):
        return 0
    tp = TopicPartition(topic, 0)
    with Consumer(bootstrap) as consumer:
        return consumer.end_offsets([tp])[tp]


def start_mirror(source: str, target: str, topic: str, log_path: Path) -> subprocess.Popen:
    with open(log_path, "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "tslog.client.cli", "mirror",
                                 "--source", source, "--target", target, "--topics", topic],
                                stdout=log, stderr=log)


def stop_mirror(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def mirror_rate(source: str, target: str, topic: str, records: int, log_path: Path) -> float:
    """Records/s from the first mirrored record on the target to the last."""
    with Admin(source) as admin:
        admin.create_topic(topic, 1)
    fill(source, topic, records)
    process = start_mirror(source, target, topic, log_path)
    try:
        first = first_at = None
        tp = TopicPartition(topic, 0)
        deadline = time.monotonic() + 120
        while end_offset(target, topic) == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        with Consumer(target) as consumer:
            while time.monotonic() < deadline:
                count = consumer.end_offsets([tp])[tp]
                now = time.perf_counter()
                if first is None:
                    first, first_at = count, now
                if count >= records:
                    return (count - first) / max(now - first_at, 1e-6)
                time.sleep(0.005)
        raise RuntimeError(f"the mirror did not copy {records} records within 120 s; its "
                           f"log ends: {log_path.read_text()[-2000:]}")
    finally:
        stop_mirror(process)


def steady_lag(source: str, target: str, topic: str, rate: int, seconds: float,
               log_path: Path) -> np.ndarray:
    """Lag (target LAT - CreateTime, ms) of every record written at ``rate`` records/s."""
    with Admin(source) as admin:
        admin.create_topic(topic, 1)
    process = start_mirror(source, target, topic, log_path)
    stop = threading.Event()
    total = int(rate * seconds)

    def produce() -> None:
        per_call = 500
        interval = per_call / rate
        values = [VALUE] * per_call
        with Producer(source, linger_ms=0) as producer:
            next_at = time.perf_counter()
            for _ in range(0, total, per_call):
                producer.send_batch(topic, values, partition=0)
                next_at += interval
                stop.wait(max(0.0, next_at - time.perf_counter()))
            producer.flush()

    try:
        while not topic_exists(target, topic) and process.poll() is None:
            time.sleep(0.05)  # the mirror is up: it created the topic on the target
        writer = threading.Thread(target=produce)
        writer.start()
        lags = []
        seen = 0
        tp = TopicPartition(topic, 0)
        deadline = time.monotonic() + seconds + 60
        with Consumer(target, auto_offset_reset="earliest") as consumer:
            while end_offset(target, topic) == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            while seen < total and time.monotonic() < deadline:
                for batch in consumer.poll_batches(timeout_ms=200):
                    columns = batch.columns
                    lags.append(columns.log_append_time - producer_times(columns, batch.start))
                    seen += columns.record_count - batch.start
        writer.join()
        return np.concatenate(lags) if lags else np.zeros(1)
    finally:
        stop.set()
        stop_mirror(process)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=50_000, help="records/s for the lag run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the lag run")
    parser.add_argument("--quick", action="store_true",
                        help="1 run, 20,000 records, 5,000 records/s for 2 s")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.records, args.rate, args.seconds = 1, 20_000, 5_000, 2.0
    with tempfile.TemporaryDirectory(prefix="tslog-mirror-bench-") as root:
        source = BrokerProcess(Path(root) / "source").start()
        target = BrokerProcess(Path(root) / "target").start()
        log_path = Path(root) / "mirror.log"
        try:
            raw, mirrored, p50s, p99s, maxes = [], [], [], [], []
            for run in range(args.runs):
                with Admin(target.bootstrap) as admin:
                    admin.create_topic(f"raw{run}", 1)
                raw.append(fill(target.bootstrap, f"raw{run}", args.records))
                mirrored.append(mirror_rate(source.bootstrap, target.bootstrap,
                                            f"copy{run}", args.records, log_path))
                lags = steady_lag(source.bootstrap, target.bootstrap, f"steady{run}",
                                  args.rate, args.seconds, log_path)
                p50s.append(float(np.percentile(lags, 50)))
                p99s.append(float(np.percentile(lags, 99)))
                maxes.append(float(lags.max()))
        finally:
            source.terminate()
            target.terminate()
    raw_rate, mirror_rate_ = statistics.median(raw), statistics.median(mirrored)
    mb = len(VALUE) / 1e6
    print_table(f"Mirror throughput ({args.runs} runs, {args.records:,} records of 100 B, "
                f"1 partition; medians, min-max)",
                ["what", "records/s", "MB/s (values)", "min-max records/s", "vs raw",
                 "target"],
                [["raw send_batch into the target", f"{raw_rate:,.0f}", f"{raw_rate * mb:.1f}",
                  f"{min(raw):,.0f}-{max(raw):,.0f}", "1.00x", "-"],
                 ["tslog mirror source -> target", f"{mirror_rate_:,.0f}",
                  f"{mirror_rate_ * mb:.1f}", f"{min(mirrored):,.0f}-{max(mirrored):,.0f}",
                  f"{mirror_rate_ / raw_rate:.2f}x",
                  ">= 0.5x " + ("met" if mirror_rate_ >= 0.5 * raw_rate else "NOT met")]])
    print_table(f"Mirror lag under a steady {args.rate:,} records/s for {args.seconds:g} s "
                f"(target LAT - CreateTime; {args.runs} runs)",
                ["rate records/s", "p50 ms (median)", "p99 ms (median)", "p99 ms min-max",
                 "max ms (median)"],
                [[f"{args.rate:,}", f"{statistics.median(p50s):.0f}",
                  f"{statistics.median(p99s):.0f}", f"{min(p99s):.0f}-{max(p99s):.0f}",
                  f"{statistics.median(maxes):.0f}"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
