"""``bench/kafka.py`` still runs end to end beside Apache Kafka (so the comparison cannot
rot): ``--quick``, one run at a tiny size; only the table's shape (every row the issue
lists) is asserted, never a figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kafka_reference.bench_run import quick_table

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kafka.py"
PRODUCE = ("kafka-producer-perf-test", "confluent-kafka", "raw Kafka protocol, 1000 per batch",
           "tslog raw, native port")
LOOKUP = ("raw Kafka ListOffsets loop", "confluent-kafka offsets_for_times",
          "tslog Consumer.offsets_for_times, native port")
ROWS = {
    *(("produce acks=1", path) for path in PRODUCE),
    ("produce acks=1", "tslog Producer.send_batch, native port"),
    ("produce 1-record batches", "raw Kafka protocol, 1 per batch, 8 in flight"),
    ("produce 1-record batches", "tslog raw, native port, 8 in flight"),
    *(("produce acks=all, default", path) for path in PRODUCE),
    *(("produce durable", path) for path in PRODUCE),
    *(("consume from a time", path) for path in (
        "kafka-consumer-perf-test (from the first record)", "confluent-kafka",
        "tslog Consumer.poll, native port", "tslog Consumer.poll_batches, native port")),
    *(("lookup, 2,000 records", path) for path in LOOKUP),
    *(("lookup, 3,000 records", path) for path in LOOKUP),
    *(("broker", f"CPU ms per 1000 records, perf-test {short}")
      for short in ("acks=1", "acks=all", "durable")),
    ("broker", "RSS idle, after start (MB)"), ("broker", "RSS after the runs (MB)"),
    ("broker", "launch to serving (s)"),
}


@pytest.mark.kafka_reference
@pytest.mark.slow
@pytest.mark.timeout(1200)  # two brokers and a dozen tool JVMs: minutes on a loaded machine
def test_kafka_bench_prints_every_row():
    output, rows = quick_table(BENCH)
    assert rows[0] == ["op", "path", "Apache Kafka", "tslog", "tslog / Kafka"]
    assert sorted((row[0], row[1]) for row in rows[2:]) == sorted(ROWS), output
    assert "load average" in output
