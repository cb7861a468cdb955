"""The README's first-screen commands and its Python examples run as written, in order, and
again (a reader tries them twice), against a real broker. Only the address is replaced: the
README's 127.0.0.1:9092 becomes the test broker's, and ``.venv/bin/`` this interpreter's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess
from tslog.client import Admin

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    """The indented block after "Then, in another shell:"."""
    after = README.split("Then, in another shell:\n", 1)[1]
    block = re.match(r"\n((?:    .*\n)+)", after).group(1)
    return [line[4:] for line in block.splitlines()]


def python_block(heading: str) -> str:
    section = README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


def run_shell(line: str, bootstrap: str, cwd: Path) -> str:
    bindir = Path(sys.executable).parent
    line = line.replace(".venv/bin/", f"{bindir}/").replace("127.0.0.1:9092", bootstrap)
    result = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120,
                            cwd=cwd, env={**os.environ, "TSLOG_BOOTSTRAP": bootstrap})
    assert result.returncode == 0, (line, result.stderr)
    return result.stdout


def run_python(code: str, bootstrap: str, cwd: Path) -> str:
    result = subprocess.run([sys.executable, "-c", code.replace("127.0.0.1:9092", bootstrap)],
                            capture_output=True, text=True, timeout=120, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_quick_start_then_the_python_client_example_twice(broker, tmp_path):
    commands = quick_start_commands()
    assert len(commands) == 4 and "topics create events" in commands[0]
    client = python_block("Python client")
    for attempt in (1, 2):
        outputs = [run_shell(line, broker.bootstrap, tmp_path) for line in commands]
        consumed = outputs[2].splitlines()
        # hello, world; the second time also the first pair and the Python example's record
        assert len(consumed) == (2 if attempt == 1 else 5)
        printed = run_python(client, broker.bootstrap, tmp_path)
        assert "b'hello'" in printed  # the replay from the record it just sent
    assert len(outputs[3].splitlines()) >= 3  # a header row and one line per partition


def test_the_storage_engine_example_runs_in_a_fresh_directory_and_again(tmp_path):
    code = python_block("Using the storage engine")
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=60, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / "events-0").is_dir()


def test_the_config_file_example_sets_broker_wide_defaults(tmp_path):
    """The TOML block of "Running the broker": its topic defaults are what a new topic gets
    (the test's --listen flag overrides the file's address, as flags do)."""
    (toml,) = re.findall(r"```toml\n(.*?)```", README, re.S)
    config = tmp_path / "broker.toml"
    config.write_text(toml)
    broker = BrokerProcess(tmp_path / "data", args=["--config", str(config)]).start()
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic("events", partitions=-1)
            assert len(admin.describe_topic("events").partitions) == 3
            configs = admin.describe_configs("events")
            assert configs["retention.ms"].value == "86400000"
            assert configs["segment.bytes"].value == "268435456"
    finally:
        broker.stop()
