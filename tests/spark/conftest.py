"""Fixtures for the Spark tests: one local[2] SparkSession and one broker process per module.

Starting a SparkSession costs 10-20 s on a 2-core machine, so it is shared by the whole
session; the broker (a real ``tslog-broker`` subprocess) is shared per module. Tests create
their own topics. The repo root is put on PYTHONPATH before the JVM starts so that PySpark's
Python workers find the top-level ``pyspark_tslog`` module even in an editable install (whose
import hook PySpark's module scan cannot see), which is what makes ``format("tslog")`` work
without a register call.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from tests.helpers.broker_process import BrokerProcess  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


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

    paths = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
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
