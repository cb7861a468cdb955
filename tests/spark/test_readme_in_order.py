"""The README read top to bottom, as a new user does: its first command starts the broker
(``tslog-broker`` in an empty directory, data in ./tslog-data), then the quick start's
commands, the Python client example, and the Spark batch and streaming examples, each run as
written on the state the steps before it left, in the README's order.

The broker, the quick start's commands and the Python client run from a fresh venv that the
README's own "Run it" install line makes in that empty directory (``python3 -m venv .venv &&
.venv/bin/pip install -q -e .``, with this repository's path for ``.``), so a dependency the
plain install lacks fails here, not on a reader's machine. pip's cache keeps that quick;
bytecode compiling and pip's version check are switched off (``PIP_*`` variables), which
changes no installed file. The Spark examples run on this test's venv, which has the spark
extra that the README's Spark section tells the reader to install.

Only what cannot be the same on a shared test machine is replaced besides: the README's
127.0.0.1:9092 by an ephemeral port (``TSLOG_LISTEN`` for the broker). Spark runs in a child
process with ``PYSPARK_PYTHON`` unset and only the system directories on ``PATH``, so the
example's own builder line is what makes Spark's workers import tslog.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.broker_process import free_port, probe
from tests.helpers.readme import (README, ROOT, python_block, python_blocks,
                                  quick_start_commands, run_python, run_shell, section)

# The fresh venv's install runs before Spark's examples: the default timeout is too short.
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(600)]


def run_it_line() -> tuple[str, str]:
    """The README's "Run it" line: its install step and its broker command."""
    [line] = re.findall(r"^    (python3 -m venv .venv && .*)$", README.split("Test it:", 1)[0],
                        re.M)
    install, _, start = line.rpartition(" && ")
    assert start == ".venv/bin/tslog-broker" and "pip install" in install
    return install, start


def fresh_venv(cwd: Path) -> Path:
    """The "Run it" line's install step, run in ``cwd`` with the system's python3 (not this
    test's venv) and this repository for ``.``; returns the new venv's bin directory."""
    install, _ = run_it_line()
    assert install.endswith(" -e ."), install
    command = install[:-1] + shlex.quote(str(ROOT))
    inherited = {k: v for k, v in os.environ.items()
                 if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    path = os.pathsep.join(entry for entry in os.environ.get("PATH", "").split(os.pathsep)
                           if entry and Path(entry) != Path(sys.executable).parent)
    done = subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**inherited, "PATH": path, "PIP_NO_COMPILE": "1",
                                            "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert done.returncode == 0, (command, done.stderr[-3000:])
    return cwd / ".venv" / "bin"


def start_broker(cwd: Path, bindir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = run_it_line()[1].replace(".venv/bin/", f"{bindir}/")
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


def test_the_readme_says_to_install_the_spark_extra_this_test_runs_spark_with():
    assert ".venv/bin/pip install -q -e '.[spark]'" in section("Spark")  # the reader's step
    assert importlib.util.find_spec("pyspark") is not None  # ... which this venv stands for


def test_the_readme_top_to_bottom(tmp_path):
    bindir = fresh_venv(tmp_path)
    process, bootstrap = start_broker(tmp_path, bindir)
    try:
        for line in quick_start_commands():
            run_shell(line, bootstrap, tmp_path, bindir)
        run_python(python_block("Python client"), bootstrap, tmp_path,
                   python=str(bindir / "python"))
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
