"""register(spark) tells a user whose Spark workers run another Python what to do, in a line.

The check needs its own SparkContext (the worker interpreter is fixed when the context
starts), so it runs in a child process: a fresh session whose PYSPARK_PYTHON is Debian's
``/usr/bin/python3``, which has PySpark's worker available through Spark but no tslog.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SYSTEM_PYTHON = "/usr/bin/python3"

SCRIPT = textwrap.dedent("""
    from pyspark.sql import SparkSession
    from tslog.spark_connector import TslogWorkerError, register

    spark = (SparkSession.builder.master("local[1]")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    try:
        register(spark)
    except TslogWorkerError as exc:
        print("ERROR:" + str(exc))
    else:
        print("REGISTERED")
    spark.stop()
""")


def run_with_worker_python(worker_python: str) -> str:
    env = dict(os.environ, PYSPARK_PYTHON=worker_python, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(("ERROR:", "REGISTERED"))]
    assert len(lines) == 1, done.stdout[-2000:]
    return lines[0]


def test_workers_without_tslog_get_one_line_naming_the_interpreter_and_the_fix():
    if not os.path.exists(SYSTEM_PYTHON) or shutil.which("java") is None:
        pytest.skip("needs Debian's python3 and a Java runtime")
    has_tslog = subprocess.run([SYSTEM_PYTHON, "-c", "import tslog"], capture_output=True)
    if has_tslog.returncode == 0:
        pytest.skip(f"{SYSTEM_PYTHON} can import tslog here")
    line = run_with_worker_python(SYSTEM_PYTHON)
    assert line.startswith("ERROR:"), line
    assert SYSTEM_PYTHON in line and "cannot import tslog" in line
    assert f"PYSPARK_PYTHON={sys.executable}" in line


def test_workers_running_this_interpreter_register_the_source():
    if shutil.which("java") is None:
        pytest.skip("needs a Java runtime")
    assert run_with_worker_python(sys.executable) == "REGISTERED"
