"""Fixtures for the Spark tests: one local[2] SparkSession and one broker process per module.

Starting a SparkSession costs 10-20 s on a 2-core machine, so it is shared by the whole
session; the broker (a real ``tslog-broker`` subprocess) is shared per module. Tests create
their own topics. ``format("tslog")`` works without a register call because the package
installs a top-level ``pyspark_tslog`` module (also in an editable install, see
build_support/tslog_build_backend.py). Spark binds to 127.0.0.1 only.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tests.helpers.kafka_reference import ReferenceUnavailable, jars  # noqa: E402

# Spark's own Kafka source (fetched by mvn on first use; test_spark_kafka_source.py): jars go
# on the class path when the session starts, so the one shared session carries them. Why it
# was not fetched is kept for those tests to report; the other Spark tests do not need it.
KAFKA_SOURCE: dict[str, str] = {}


def _kafka_source_jars() -> str:
    try:
        return ",".join(str(jar) for jar in sorted(jars("spark").glob("*.jar")))
    except ReferenceUnavailable as exc:
        KAFKA_SOURCE["unavailable"] = str(exc)
        return ""

@pytest.fixture(scope="session")
def plan_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "plan.jsonl"
    os.environ["TSLOG_SPARK_PLAN_LOG"] = str(path)
    return path


@pytest.fixture(scope="session")
def spark(plan_log):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark")
    from pyspark.sql import SparkSession

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    # Python workers must run this interpreter (the one tslog is installed in), not the
    # first python3 on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]")
               .appName("tslog-spark-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
               .config("spark.driver.memory", "1g")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.jars", _kafka_source_jars())
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    data = tmp_path_factory.mktemp("spark-broker")
    process = BrokerProcess(data / "data",
                            env={"TSLOG_LOG_RETENTION_CHECK_INTERVAL_MS": "100"})
    process.start()
    yield process
    process.cleanup()
