"""What every part of the broker benchmark shares: sizes, the figures' formatting, and the
raw connection (``tests/helpers/wire.py``'s ``Wire``, so tests and benchmarks speak to the
broker through one piece of code)."""

from __future__ import annotations

import statistics
import sys

from tests.helpers.wire import Wire

from .client_rows import BATCH_RECORDS, RECORD_OVERHEAD_BYTES, VALUE  # noqa: F401 (shared)

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 30.0
REDIS_BASE_MS = 1_700_000_000_000
REDIS_PER_MS = 10  # entries per millisecond id in the filled Redis stream


def connect(port: int) -> Wire:
    """A raw blocking connection to a broker on this machine, for the rows that measure the
    broker without the client (and for setting up topics)."""
    return Wire(HOST, port, timeout_s=30.0, client_id="bench")


def create_topic(wire: Wire, topic: str, replication_factor: int = 1) -> None:
    code = wire.create_topic(topic, replication_factor=replication_factor)
    if code:
        raise RuntimeError(f"create topic {topic}: error {code}")


def median(values):
    return statistics.median(values)


def spread(values, scale=1.0, digits=0) -> str:
    """``median (min-max)``, each scaled."""
    if not values:
        return "-"
    form = f"{{:,.{digits}f}}"
    return (f"{form.format(median(values) * scale)} "
            f"({form.format(min(values) * scale)}-{form.format(max(values) * scale)})")


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def print_table(title: str, header: list[str], rows: list[list[str]], notes=()) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).rjust(w) for c, w in zip(row, widths)) + " |")
    for note in notes:
        print(f"  {note}")
    sys.stdout.flush()


def ratio(a, b, digits=2) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.{digits}f}x"


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "NOT met")


def lookup_stats(latency_runs: list[list[float]]) -> tuple[list, list, list]:
    p50s, p99s, p999s = [], [], []
    for latencies in latency_runs:
        latencies = sorted(latencies)
        p50s.append(percentile(latencies, 0.5))
        p99s.append(percentile(latencies, 0.99))
        p999s.append(percentile(latencies, 0.999))
    return p50s, p99s, p999s

