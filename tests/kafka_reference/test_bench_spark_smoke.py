"""``bench/spark.py`` still runs end to end with Spark's own Kafka source on tslog and on
Apache Kafka beside ``format("tslog")`` (so the comparison cannot rot): ``--quick``, one
size; the table's rows and the counts the bench checks itself are asserted, never a figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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
    done = subprocess.run([sys.executable, str(BENCH), "--quick"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]]
            for line in done.stdout.splitlines() if line.startswith("|")]
    assert [row[0] for row in rows[2:]] == READERS, done.stdout
    assert all(row[1] == "200,000" for row in rows[2:]), done.stdout
    assert "Spark's Kafka source, tslog / Apache Kafka" in done.stdout
    assert "left out" not in done.stdout
