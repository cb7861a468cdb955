"""Where a new user, a Kafka user or a Redis user trips in the first week (issue 40): every
entry point answers --version, errors name the setting or file to change, and the CLI speaks
to the wrong port or a secured port with one line saying what to do. Real brokers, real
console scripts of this venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def run(program: str, *args, stdin: bytes | None = None, env: dict | None = None):
    return subprocess.run([str(BIN / program), *args], input=stdin, capture_output=True,
                          timeout=60, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("program", ["tslog", "tslog-broker", "tslog-mirror"])
def test_every_entry_point_prints_its_version(program):
    result = run(program, "--version")
    assert result.returncode == 0, result.stderr
    name, version = result.stdout.decode().split()
    assert name == program and version[0].isdigit()
