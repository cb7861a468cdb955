"""The README's first-screen commands and its Python examples run as written, in order, and
again (a reader tries them twice), against a real broker. Only the address is replaced: the
README's 127.0.0.1:9092 becomes the test broker's, and ``.venv/bin/`` this interpreter's."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.helpers import readme
from tests.helpers.broker_process import BrokerProcess
from tests.helpers.readme import python_block, quick_start_commands, run_python, run_shell
from tslog.client import Admin

README = readme.README


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
