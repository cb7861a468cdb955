"""The records-section column checks, scalar against numpy, by record count: where the
crossover that sets ``SCALAR_MAX_RECORDS`` lies. Prints a table; asserts nothing.

    python bench/column_check.py            # 1 to 1,024 records, 7 runs per figure
    python bench/column_check.py --quick    # a smoke run

Both paths are timed on the same valid batch (100-byte values, no keys, no headers), in
turns within each run so that the machine's drift hits both alike; each figure is the median
of the runs' per-call times, with the min-max. ``scalar/numpy`` below 1 means the scalar path
is cheaper. The crossover line names the largest count at which the scalar path still wins.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit

from tslog.protocol._column_check import (
    SCALAR_MAX_RECORDS,
    check_columns_scalar,
    check_columns_vectorised,
)
from tslog.protocol._record_check import section_sizes
from tslog.protocol.batch_header import HEADER_SIZE, parse_header
from tslog.protocol.records import build_batch

VALUE = b"v" * 100
START_MS = 1_700_000_000_000


def per_call_us(function, args, number: int) -> float:
    return timeit.timeit(lambda: function(*args), number=number) / number * 1e6


def measure(records: int, runs: int, number: int) -> tuple[list[float], list[float]]:
    """Per-call microseconds of (scalar, numpy) over ``runs`` alternating runs."""
    batch = build_batch([VALUE] * records, create_times=START_MS)
    header = parse_header(batch)
    section = memoryview(batch).cast("B")[HEADER_SIZE:]
    keys_bytes, values_bytes, _ = section_sizes(section, header)
    args = (section, header, keys_bytes, values_bytes)
    scalar, vectorised = [], []
    for run in range(runs):
        pair = ((check_columns_scalar, scalar), (check_columns_vectorised, vectorised))
        for function, times in (pair if run % 2 == 0 else pair[::-1]):
            times.append(per_call_us(function, args, number))
    return scalar, vectorised


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few counts and runs")
    parser.add_argument("--runs", type=int, default=None, help="runs per figure (default 7)")
    args = parser.parse_args(argv)
    runs = args.runs or (2 if args.quick else 7)
    counts = [1, 8, 64] if args.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    number = 200 if args.quick else 2000
    print(f"column checks, python {sys.version.split()[0]}: median of {runs} runs of "
          f"{number} calls (min-max), us per batch; SCALAR_MAX_RECORDS = {SCALAR_MAX_RECORDS}")
    header = ["records", "scalar us", "numpy us", "scalar/numpy"]
    rows, wins = [], []
    for records in counts:
        scalar, vectorised = measure(records, runs, number)
        ratio = statistics.median(scalar) / statistics.median(vectorised)
        if ratio < 1:
            wins.append(records)
        rows.append([f"{records:,}", spread(scalar), spread(vectorised), f"{ratio:.2f}x"])
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths)) + " |")
    if wins:
        print(f"  the scalar path is cheaper up to {max(wins):,} records (of the counts measured)")
    else:
        print("  the scalar path was cheaper at none of the counts measured")
    return 0


if __name__ == "__main__":
    sys.exit(main())
