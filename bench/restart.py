"""Restart time after kill -9: how long a crashed broker takes to answer again, by log size.

A real broker process gets a topic of one partition filled to each size (acks=1 batches of
16 KiB by default, default topic config: 1 GiB segments), is stopped cleanly once (so everything so far is
flushed and checkpointed), and then goes through a crash loop: produce a small unflushed
tail, SIGKILL, start again and time until it answers ApiVersions. Recovery should cost what
the unflushed tail costs, not what the log holds, and not more with every crash.
Prints a table of medians; asserts nothing.

    python bench/restart.py                  # 10 MiB and 1000 MiB logs, 5 crashes each
    python bench/restart.py --quick          # 10 MB and 100 MB, 3 crashes each
    python bench/restart.py --sizes-mb 10,200 --runs 7 --tail-mb 2

Times include starting the interpreter (about 0.3 s here); the last column is what the
broker itself logged as scanned by recovery, when it logs it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.helpers and bench

from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tests.helpers.wire import Wire, batch  # noqa: E402
from bench.storage import print_table  # noqa: E402  (one table printer for the storage benches)

VALUE_BYTES = 1000
TOPIC = "bench"
_SCANNED = re.compile(r"recovery scanned (\d+) bytes")


def fill(wire: Wire, size_bytes: int, batch_bytes: int) -> int:
    """Produce about ``size_bytes`` of acks=1 batches; return the bytes sent."""
    sent = 0
    values = [b"x" * VALUE_BYTES] * max(1, batch_bytes // VALUE_BYTES)
    while sent < size_bytes:
        records = batch(values)
        result = wire.produce(TOPIC, 0, records, acks=1)
        assert result["error_code"] == 0, result
        sent += len(records)
    return sent


def scanned_bytes(log_text: str) -> int | None:
    found = _SCANNED.findall(log_text)
    return int(found[-1]) if found else None


def crash_loop(root: Path, size_mb: int, runs: int, tail_mb: float, batch_bytes: int) -> list[str]:
    data_dir = root / f"data-{size_mb}"
    broker = BrokerProcess(data_dir)
    try:
        broker.start()
        with Wire(broker.host, broker.port, timeout_s=60) as wire:
            assert wire.create_topic(TOPIC) == 0
            fill(wire, size_mb << 20, batch_bytes)
        started = time.monotonic()
        broker.restart()  # SIGTERM: flushed, checkpointed, clean marker
        clean_s = time.monotonic() - started
        times, scanned = [], []
        for _ in range(runs):
            with Wire(broker.host, broker.port, timeout_s=60) as wire:
                fill(wire, int(tail_mb * (1 << 20)), batch_bytes)
                end = wire.log_end_offset(TOPIC)
            broker.kill()
            log_size = len(broker.log_text())
            started = time.monotonic()
            broker.start()
            times.append(time.monotonic() - started)
            scanned.append(scanned_bytes(broker.log_text()[log_size:]))
            with Wire(broker.host, broker.port, timeout_s=60) as wire:
                assert wire.log_end_offset(TOPIC) == end, "acknowledged records lost"
        disk = sum(p.stat().st_size for p in data_dir.rglob("*.log"))
        segments = len(list(data_dir.rglob("*.log")))
        known = [s for s in scanned if s is not None]
        return [
            f"{disk / 1e6:,.0f} MB",
            str(segments),
            f"{clean_s:.2f}",
            f"{statistics.median(times):.2f}",
            f"{min(times):.2f}-{max(times):.2f}",
            f"{times[0]:.2f} / {times[-1]:.2f}",
            f"{statistics.median(known) / 1e6:.1f} MB" if known else "not logged",
        ]
    finally:
        broker.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 MB and 100 MB, 3 crashes")
    parser.add_argument("--sizes-mb", default=None, help="comma-separated log sizes in MiB")
    parser.add_argument("--runs", type=int, default=None, help="crashes per size (default 5)")
    parser.add_argument("--tail-mb", type=float, default=1.0, help="unflushed MiB per crash")
    parser.add_argument("--batch-kb", type=int, default=16, help="KiB per produced batch")
    parser.add_argument("--dir", default=None, help="where to put the data (default: temp)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in (args.sizes_mb or ("10,100" if args.quick else "10,1000")).split(",")]
    runs = args.runs or (3 if args.quick else 5)
    root = Path(tempfile.mkdtemp(prefix="tslog-restart-", dir=args.dir))
    try:
        rows = [crash_loop(root, size, runs, args.tail_mb, args.batch_kb << 10) for size in sizes]
        medians = [float(row[3]) for row in rows]
        print_table(
            f"Restart after kill -9 ({runs} crashes in a row per size, {args.tail_mb:g} MiB of "
            f"acks=1 batches of {args.batch_kb} KiB produced before each; seconds until "
            "ApiVersions answers, i.e. every log is open)",
            ["log", "segments", "clean restart s", "restart after kill -9 s (median)",
             "min-max", "first / last crash", "recovery scanned (median)"],
            rows,
        )
        ratio = max(medians) / min(medians)
        print(f"  largest/smallest median: {ratio:.2f}x (target <= 2x: "
              f"{'met' if ratio <= 2 else 'NOT met'})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
