"""Produce throughput while a Prometheus-speed scraper reads /metrics, beside the same
without: what being observed costs the broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from .common import BATCH_RECORDS, HOST, connect, create_topic, median, print_table, spread, verdict
from .context import Setup
from .produce import produce_raw


SCRAPER = r"""
import signal, sys, time, urllib.request
url, interval, stop = sys.argv[1], float(sys.argv[2]), []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
durations, began = [], time.monotonic()
next_at = began
while not stop:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=5) as response:
        size = len(response.read())
    durations.append(time.perf_counter() - started)
    if len(durations) == 1:
        print("ready", flush=True)
    next_at += interval
    time.sleep(max(0.0, next_at - time.monotonic()))
durations.sort()
print(len(durations) / (time.monotonic() - began), durations[len(durations) // 2], size, flush=True)
"""


class Scraper:
    """A Prometheus-speed scraper in its own process (as Prometheus is): GET /metrics every
    ``interval_s``; stopped by pid with SIGTERM, it reports scrapes/s, median ms and bytes."""

    def __init__(self, port: int, interval_s: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SCRAPER, f"http://{HOST}:{port}/metrics", str(interval_s)],
            stdout=subprocess.PIPE, text=True)
        if self.process.stdout.readline().strip() != "ready":
            self.process.kill()
            raise RuntimeError("the /metrics scraper did not start")

    def stop(self) -> tuple[float, float, int]:
        os.kill(self.process.pid, signal.SIGTERM)
        out, _ = self.process.communicate(timeout=30)
        per_s, median_s, size = out.split()
        return float(per_s), float(median_s), int(size)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, all its threads (also exited ones,
    like the metrics server's per-request threads) included."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def section_scrape(setup: Setup, interval_s: float = 0.1) -> None:
    """Produce throughput (raw, acks=1: the broker's capacity) with a scraper fetching
    /metrics every 100 ms beside the same without. Runs come in pairs, the order alternating,
    and the ratio is the median of the pairs' ratios, so drift in the machine's load cancels;
    the broker's CPU per record (from /proc) is the figure load elsewhere disturbs least."""
    batches = max(2000, 10 * setup.produce_batches)  # ~1 s a run here: ~10 scrapes in it
    rates: dict[str, list[float]] = {"without": [], "with": []}
    cpu: dict[str, list[float]] = {"without": [], "with": []}
    scrapes = []
    pid = setup.broker.process.pid
    with connect(setup.broker.port) as admin:
        for run in range(2 * setup.runs):
            for mode in (("without", "with") if run % 2 == 0 else ("with", "without")):
                topic = f"scrape-{mode}-{run}"
                create_topic(admin, topic)
                scraper = Scraper(setup.metrics_port, interval_s) if mode == "with" else None
                try:
                    cpu_before = process_cpu_s(pid)
                    elapsed, _ = produce_raw(setup.broker.port, topic, batches, 1, setup.window)
                    cpu[mode].append((process_cpu_s(pid) - cpu_before) / batches)
                finally:
                    if scraper is not None:
                        scrapes.append(scraper.stop())
                rates[mode].append(batches * BATCH_RECORDS / elapsed)
                admin.delete_topic(topic)
    pair_ratio = median([w / wo for w, wo in zip(rates["with"], rates["without"])])
    cpu_ratio = median([w / wo for w, wo in zip(cpu["with"], cpu["without"])])
    per_million = {mode: f"{median(values) * 1e6 / BATCH_RECORDS:.2f}"
                   for mode, values in cpu.items()}
    rows = [["no scraper", spread(rates["without"]), per_million["without"], "-", "-", "-",
             "1.00x", "1.00x"],
            [f"GET /metrics every {interval_s * 1000:.0f} ms (own process)",
             spread(rates["with"]), per_million["with"],
             f"{median([s[0] for s in scrapes]):.1f}",
             f"{median([s[1] for s in scrapes]) * 1000:.1f}", f"{scrapes[-1][2]:,}",
             f"{pair_ratio:.2f}x ({verdict(pair_ratio >= 0.95)} >= 0.95x)",
             f"{cpu_ratio:.2f}x"]]
    print_table(
        f"Produce while Prometheus-speed scraping: raw socket, acks=1, {batches:,} batches of "
        f"{BATCH_RECORDS} per run, {2 * setup.runs} pairs of runs",
        ["scraper", "records/s (min-max)", "broker CPU s per 1M records", "scrapes/s",
         "scrape ms (median)", "scrape bytes", "throughput with/without (target)",
         "broker CPU per record with/without"],
        rows,
        notes=["each scrape snapshots partition and group state on the broker's event loop "
               "and writes the text in the broker's metrics thread; the scraper runs in its "
               "own process, like Prometheus, and takes CPU of its own on the shared cores.",
               "ratios are medians of per-pair ratios (a pair: one run without, one with)."])
