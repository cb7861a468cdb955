"""``bench/kafka.py`` still runs end to end beside Apache Kafka (so the comparison cannot
rot): one run at a tiny size; only the table's shape is asserted, never a figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kafka.py"
PATHS = ("kafka-producer-perf-test acks=1", "kafka-producer-perf-test acks=all",
         "confluent-kafka acks=1", "tslog Producer.send_batch, native port",
         "kafka-consumer-perf-test", "confluent-kafka", "confluent-kafka offsets_for_times",
         "tslog Consumer, native port", "RSS after the runs (MB)", "launch to serving (s)")


@pytest.mark.kafka_reference
@pytest.mark.slow
def test_kafka_bench_prints_every_row():
    done = subprocess.run([sys.executable, str(BENCH), "--runs", "1", "--records", "2000",
                           "--lookups", "20"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]]
            for line in done.stdout.splitlines() if line.startswith("|")]
    assert rows[0] == ["op", "path", "Apache Kafka", "tslog", "tslog / Kafka"]
    assert sorted(row[1] for row in rows[2:]) == sorted(PATHS), done.stdout
