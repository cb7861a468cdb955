"""The README read top to bottom, as a new user does: its first command starts the broker
(``tslog-broker`` in an empty directory, data in ./tslog-data), then the quick start's
commands, the Python client example, and the Spark batch and streaming examples, each run as
written on the state the steps before it left, in the README's order.

Only what cannot be the same on a shared test machine is replaced: the README's
127.0.0.1:9092 by an ephemeral port (``TSLOG_LISTEN`` for the broker), and ``.venv/bin/`` by
this interpreter's venv, the one the README's install line made. Spark runs in a child
process with ``PYSPARK_PYTHON`` unset and only the system directories on ``PATH``, so the
example's own builder line is what makes Spark's workers import tslog.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.broker_process import free_port, probe
from tests.helpers.readme import (README, python_block, python_blocks, quick_start_commands,
                                  run_python, run_shell)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def broker_command() -> str:
    """The README's "Run it" line's broker, after its install step."""
    [line] = re.findall(r"^    (python3 -m venv .venv && .*)$", README.split("Test it:", 1)[0],
                        re.M)
    install, _, start = line.rpartition(" && ")
    assert start == ".venv/bin/tslog-broker" and "pip install" in install
    return start


def start_broker(cwd: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = broker_command().replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    log = open(cwd / "broker.log", "wb")
    process = subprocess.Popen([command], cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                               env={**environment, "TSLOG_LISTEN": f"127.0.0.1:{port}"})
    log.close()
    deadline = time.monotonic() + 60  # a readiness wait, as BrokerProcess's
    while time.monotonic() < deadline and process.poll() is None:
        if probe("127.0.0.1", port):
            break
        time.sleep(0.02)
    assert process.poll() is None, (cwd / "broker.log").read_text()
    return process, f"127.0.0.1:{port}"


def spark_environment() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    env.update(PATH="/usr/bin:/bin", SPARK_LOCAL_IP="127.0.0.1")
    return env


def test_the_readme_top_to_bottom(tmp_path):
    process, bootstrap = start_broker(tmp_path)
    try:
        for line in quick_start_commands():
            run_shell(line, bootstrap, tmp_path)
        run_python(python_block("Python client"), bootstrap, tmp_path)
        assert (tmp_path / "tslog-data").is_dir()  # where the README says the data goes
        script = "\n".join(python_blocks("Spark")) + (
            "\nimport json\nprint('RESULT ' + json.dumps({'batch': sorted(r.value for r in "
            "df.select(col('value').cast('string')).collect()), 'stream': sorted(r.value "
            "for r in spark.read.parquet('events-parquet').collect())}))\n")
        printed = run_python(script, bootstrap, tmp_path, env=spark_environment(),
                             timeout_s=280).splitlines()
    finally:
        process.terminate()
        assert process.wait(30) == 0
    result = json.loads(next(line for line in printed if line.startswith("RESULT "))[7:])
    # the quick start's two lines and the Python example's record, all of the last hour
    assert result["batch"] == ["hello", "hello", "world"]
    assert result["stream"] == ["hello", "hello", "world"]
    assert any("hello" in line for line in printed), "show() printed no rows"
