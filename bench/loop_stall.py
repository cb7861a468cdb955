"""Event-loop stalls of a real broker while producers fill segments that roll every MiB.

    python bench/loop_stall.py                      # this tree's broker
    python bench/loop_stall.py --broker before=/tmp/old/.venv/bin/python --broker after=python

Starts ``tslog-broker`` under ``bench/loop_probe.py`` (a timer due every ms on the broker's
loop notes how late it ran; ``--probe thread`` pings from a thread instead, as earlier
versions did), creates a topic with ``segment.bytes`` = 1 MiB, produces from several
producers for ``--seconds``, then stops the broker and prints the lag the probes saw during
the produce run: p50, p99, max. The produce rate is paced (``--rate-mib``) well below
saturation: a saturated loop always has requests queued, and the probe would measure that
queue rather than the stalls. A second row per broker produces the same with segments of
1 GiB (no roll), to tell the rolls' share from the rest. The "own" columns take from each
lag the time the loop thread waited on the run queue for a CPU meanwhile (another process or
thread had it: on 2 cores the producers here compete with the broker), leaving what the
broker's own work cost the loop. ``--pin`` runs the broker on CPU 0 and the producers on
the others: the producers no longer take the loop's CPU, but the broker's I/O worker then
shares it (on 2 cores the rolling row reads worse pinned). ``--broker`` takes LABEL=PYTHON,
any interpreter whose ``tslog`` is the broker to measure (e.g. a venv over an older
checkout), so one table compares commits. ``--stacks N`` runs the probe's watchdog and
prints, per row, the thread stacks it saw most often while the loop was late (the watchdog
is a thread that wants the GIL too: lags read a little high with it). Asserts nothing; timings on a
shared 2-core VM vary from run to run: compare rows within one invocation.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.storage import print_table  # noqa: E402
from tests.helpers.broker_process import free_port, probe  # noqa: E402
from tslog.client import Admin, Producer  # noqa: E402

PROBE = Path(__file__).resolve().parent / "loop_probe.py"
MIB = 1 << 20


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def produce(bootstrap: str, topic: str, seconds: float, value: bytes, producers: int,
            partitions: int, rate: float) -> int:
    """Produce from ``producers`` threads for ``seconds`` at ``rate`` bytes/s in all (paced
    in batches of 100 records); return the bytes sent."""
    sent = [0] * producers
    values = [value] * 100
    period = len(values) * len(value) * producers / rate

    def one(i: int) -> None:
        with Producer(bootstrap, acks=1, linger_ms=1) as producer:
            start = time.monotonic()
            for n in itertools.count():
                due = start + n * period
                if due - start > seconds:
                    break
                time.sleep(max(0.0, due - time.monotonic()))
                producer.send_batch(topic, values, partition=i % partitions)
                sent[i] += len(values) * len(value)
            producer.flush()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(producers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(sent)


def _pin_producers() -> set[int]:
    """Keep this process (the producers) off CPU 0 and return {0}, the broker's CPU."""
    cpus = os.sched_getaffinity(0)
    if 0 not in cpus or len(cpus) < 2:
        raise SystemExit("--pin needs CPU 0 and at least one more")
    os.sched_setaffinity(0, cpus - {0})
    return {0}


def run(python: str, root: Path, segment_bytes: int, args) -> dict:
    data_dir = root / f"data-{segment_bytes}"
    samples_path = root / f"samples-{segment_bytes}.json"
    port = free_port()
    options = (["--thread-probe"] if args.probe == "thread" else []) \
        + (["--stacks"] if args.stacks else [])
    command = [python, str(PROBE), str(samples_path), *options, "--", "--data-dir", str(data_dir),
               "--listen", f"127.0.0.1:{port}", "--log-level", "WARNING"]
    with open(root / f"broker-{segment_bytes}.log", "ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT,
                                   preexec_fn=(lambda: os.sched_setaffinity(0, args.pin))
                                   if args.pin else None)
    try:
        deadline = time.monotonic() + 30
        while not probe("127.0.0.1", port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"broker did not start: see {root}")
            time.sleep(0.05)
        bootstrap = f"127.0.0.1:{port}"
        with Admin(bootstrap) as admin:
            admin.create_topic("stall", partitions=args.partitions, replication_factor=1,
                               config={"segment.bytes": str(segment_bytes)})
        time.sleep(0.5)
        started = time.time()
        acked = produce(bootstrap, "stall", args.seconds, b"v" * args.value_bytes,
                        args.producers, args.partitions, args.rate_mib * MIB)
        ended = time.time()
    finally:
        process.terminate()
        process.wait(60)
    probe_output = json.loads(samples_path.read_text())
    samples = [(lag, wait) for wall, lag, wait in probe_output["samples"]
               if started <= wall <= ended]
    lags = [lag for lag, _ in samples]
    waits = [wait for _, wait in samples if wait is not None]
    own = [max(0.0, lag - wait) for lag, wait in samples] if len(waits) == len(samples) else []
    rolls = sum(1 for _ in data_dir.glob("stall-*/*.log")) - args.partitions
    return {"lags": lags, "own": own, "cpu_wait": sum(waits) if own else None, "rolls": rolls,
            "mb_s": acked / MIB / (ended - started), "stalls": probe_output["stalls"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", action="append", default=[],
                        help="LABEL=PYTHON: a broker to measure (default: this interpreter)")
    parser.add_argument("--seconds", type=float, default=8.0, help="produce run length")
    parser.add_argument("--quick", action="store_true", help="a 2-second smoke run")
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--value-bytes", type=int, default=1000)
    parser.add_argument("--rate-mib", type=float, default=16.0,
                        help="MiB/s produced in all: well below what the broker can take, "
                             "so the lag measured is stalls, not a queue of requests")
    parser.add_argument("--dir", default=None, help="where to put data (default: temp)")
    parser.add_argument("--probe", choices=("timer", "thread"), default="timer",
                        help="timer: a callback due every ms on the loop notes how late it "
                             "ran (default); thread: a thread pings the loop, as earlier "
                             "versions did (it adds a GIL-hungry thread; see loop_probe.py)")
    parser.add_argument("--stacks", type=int, default=0, metavar="N",
                        help="after the table, the N stacks the probe's watchdog saw most "
                             "often while the loop was late, per row")
    parser.add_argument("--pin", action="store_true",
                        help="run the broker on CPU 0 only and the producers on the others")
    args = parser.parse_args(argv)
    args.pin = _pin_producers() if args.pin else None
    if args.quick:
        args.seconds = 2.0
    brokers = [b.split("=", 1) for b in args.broker] or [["this tree", sys.executable]]
    rows = []
    stacks = []
    for label, python in brokers:
        for segment_bytes in (MIB, 1 << 30):
            root = Path(tempfile.mkdtemp(prefix="tslog-stall-", dir=args.dir))
            try:
                result = run(python, root, segment_bytes, args)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            lags, own = result["lags"], result["own"]
            ms = [f"{percentile(lags, q) * 1e3:.2f}" for q in (0.5, 0.99)]
            own_ms = ([f"{percentile(own, 0.99) * 1e3:.2f}", f"{max(own) * 1e3:.2f}",
                       f"{result['cpu_wait'] * 1e3:.0f}"] if own else ["-", "-", "-"])
            rows.append([label, "1 MiB" if segment_bytes == MIB else "1 GiB",
                         str(result["rolls"]), f"{result['mb_s']:.0f}", str(len(lags)),
                         *ms, f"{max(lags) * 1e3:.2f}", *own_ms])
            stacks.append((f"{rows[-1][0]}, segment.bytes {rows[-1][1]}",
                           result["stalls"][:args.stacks]))
    print_table(f"Event-loop lag during {args.seconds:g} s of produce at {args.rate_mib:g} MiB/s "
                f"({args.producers} producers, {args.partitions} partitions, "
                f"{args.value_bytes} B values, acks=1; {args.probe} probe"
                f"{', with the stack watchdog' if args.stacks else ''}"
                f"{'; broker pinned to CPU 0' if args.pin else ''})",
                ["broker", "segment.bytes", "rolls", "MiB/s", "probes", "p50 ms", "p99 ms",
                 "max ms", "own p99 ms", "own max ms", "CPU wait ms"], rows)
    print("  own: each lag less the time the loop thread waited for a CPU meanwhile (run-queue "
          "wait, from /proc/thread-self/schedstat); CPU wait: that wait summed over the run.")
    for title, seen in stacks if args.stacks else ():
        print(f"\n  where the threads were while the loop was late ({title}):")
        for stack, count in seen:
            print(f"    {count:5d}  {stack}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
