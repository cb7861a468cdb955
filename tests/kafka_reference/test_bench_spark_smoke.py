"""``bench/spark.py`` still runs end to end with Spark's own Kafka source on tslog and on
Apache Kafka beside ``format("tslog")`` (so the comparison cannot rot): ``--quick``, one
size; the table's rows and the counts the bench checks itself are asserted, never a figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kafka_reference.bench_run import quick_table

pytest.importorskip("pyspark")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "spark.py"
READERS = ['format("tslog") from a timestamp', "Spark's Kafka source on tslog",
           "Spark's Kafka source on Apache Kafka", "Parquet, same records",
           "Python source ceiling (pre-built Arrow)", "connector read path, no Spark"]


@pytest.mark.spark
@pytest.mark.kafka_reference
@pytest.mark.slow
@pytest.mark.timeout(1200)  # Spark, a Kafka JVM and a tslog broker on a loaded machine
def test_spark_bench_reads_the_range_through_every_reader():
    output, rows = quick_table(BENCH)
    assert [row[0] for row in rows[2:]] == READERS, output
    assert all(row[1] == "200,000" for row in rows[2:]), output
    assert "Spark's Kafka source, tslog / Apache Kafka" in output
    assert "left out" not in output
