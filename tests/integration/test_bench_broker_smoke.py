"""``bench/broker.py --quick`` still runs end to end (so the benchmark cannot rot).

It starts its own broker on a free loopback port and asserts nothing about timings; this test
only checks that it exits 0 and prints every table.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "broker.py"


def test_bench_broker_quick_prints_its_tables(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--runs", "1", "--no-redis", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for title in ("Produce, one producer, one partition",
                  "Produce 1-record batches (a linger-0 producer)",
                  "Consume from a timestamp to the end",
                  "Lookup by time: ListOffsets round trip",
                  "Produce while Prometheus-speed scraping",
                  "Security: plain TCP against TLS + SASL/SCRAM-SHA-256 (same run)",
                  "Kafka listener: confluent-kafka against the native raw path"):
        assert title in out, out
    for header in ("| acks", "records/s (min-max)", "tslog/Redis XADD c=1", "target?",
                   "/ Redis XADD -P 1 c=1",
                   "p50 us", "p99 us (min-max)", "p99.9 us"):
        assert header in out, out
    assert "Redis rows skipped (--no-redis)" in out
    if Path("/usr/bin/etcd").exists():  # the replication rows start three brokers and etcd
        assert "Produce with replication factor 3" in out and "acks=all / acks=1 until replicated" in out, out
    else:
        assert "replication rows SKIPPED" in out, out
    assert "tslog.client.Producer" in out and "raw Fetch loop" in out
    assert "Producer(linger_ms=0, max_in_flight=8, acks=1) sending records one by one" in out
    assert "records per batch" in out
    assert "connection set-up to first answer (ms)" in out
    assert "client alone, produce_batch" in out and "confluent-kafka consume, CPU: client" in out
    assert list(tmp_path.iterdir()) == []  # the temporary data directory was removed
