"""``bench/kafka_partitions.py`` still runs end to end beside Apache Kafka: ``--quick``,
one run at a tiny size; the table's shape is asserted (every row, a figure for each broker
that has it), never a figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kafka_reference.bench_run import quick_table

BENCH = Path(__file__).resolve().parents[2] / "bench" / "kafka_partitions.py"
BOTH = ("create the topics", "one Metadata", "one lookup by time",
        "produce to one partition, confluent",
        "produce round-robin over every partition, confluent",
        "round-robin / one partition, confluent",
        "raw Kafka Produce, a batch", "raw Kafka Produce, a 1-record",
        "spread / one partition, raw Kafka")
TSLOG_ONLY = ("produce to one partition, tslog", "produce round-robin over every partition, tslog",
              "round-robin / one partition, tslog", "raw tslog Produce on its port, a batch",
              "raw tslog Produce, a 1-record", "spread / one partition, raw tslog")


@pytest.mark.kafka_reference
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kafka_partitions_bench_prints_every_row():
    output, table = quick_table(BENCH)
    rows = {cells[0]: cells[1:] for cells in table}
    assert "2 topics x 20 partitions = 40" in output
    for start in BOTH + TSLOG_ONLY:
        [(label, (kafka, tslog))] = [(k, v) for k, v in rows.items() if k.startswith(start)]
        assert tslog[0].isdigit(), (label, tslog)
        assert kafka[0].isdigit() if start in BOTH else kafka == "-", (label, kafka)
