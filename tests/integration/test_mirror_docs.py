"""docs/mirror.md's examples run as written against two real brokers: the failover
walkthrough (as one bash script) and the config-file example. Only addresses are replaced:
127.0.0.1:9092 by the source, 127.0.0.1:9093 by the target, 127.0.0.1:9404 by a free port."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.broker_process import free_port
from tests.helpers.mirror import wait_for
from tslog.client import Admin

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "mirror.md").read_text(encoding="utf-8")


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC, flags=re.S)


def _addresses(text: str, source, target, metrics: str) -> str:
    return (text.replace("127.0.0.1:9092", source.bootstrap)
            .replace("127.0.0.1:9093", target.bootstrap).replace("127.0.0.1:9404", metrics))


def _env() -> dict:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}


@pytest.mark.slow
def test_failover_walkthrough_runs(broker_factory, tmp_path):
    source, target = broker_factory("source"), broker_factory("target")
    (script,) = [block for block in _blocks("sh") if "groups translate" in block]
    script = _addresses(script, source, target, f"127.0.0.1:{free_port()}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr + (tmp_path / "mirror.log").read_text()
    assert "committed offsets from the source" in done.stdout
    assert "committed the exact offsets on the target" in done.stdout
    with Admin(source.bootstrap) as admin:
        on_source = admin.list_consumer_group_offsets("billing")
    with Admin(target.bootstrap) as admin:
        on_target = admin.list_consumer_group_offsets("billing")
    # The target is a record-for-record copy, so the exact offsets are the source's.
    assert {tp: meta.offset for tp, meta in on_target.items()} == {
        tp: meta.offset for tp, meta in on_source.items()}
    assert {tp.partition: meta.offset for tp, meta in on_source.items()} == {0: 300, 1: 300}
    # By time: the 100 records written after T start at 500 in partition 0; partition 1 has
    # none from T on, so the group starts at its end.
    lines = done.stdout.splitlines()
    assert "0\t500\t" in "\n".join(lines) and "1\t-1\t-" in lines  # tslog offsets --source-time
    with Admin(target.bootstrap) as admin:
        audit = admin.list_consumer_group_offsets("audit")
    assert {tp.partition: meta.offset for tp, meta in audit.items()} == {0: 500, 1: 500}
    assert "committed the offsets on the target" in done.stdout
    assert "mirror interrupted" not in (tmp_path / "mirror.log").read_text()

    # The Python example of "Failing over by time", against the same target.
    (example,) = _blocks("python")
    ran = subprocess.run([sys.executable, "-c", _addresses(example, source, target, "")],
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "OffsetAndTimestamp(offset=0," in ran.stdout


@pytest.mark.slow
def test_config_file_example_runs(broker_factory, tmp_path):
    source, target = broker_factory("source"), broker_factory("target")
    metrics = f"127.0.0.1:{free_port()}"
    (config,) = _blocks("toml")
    (tmp_path / "mirror.toml").write_text(_addresses(config, source, target, metrics))
    (command,) = [block for block in _blocks("sh") if "--config mirror.toml" in block]
    process = subprocess.Popen(command.split(), cwd=tmp_path, env=_env(),
                               stderr=subprocess.PIPE, text=True)
    try:
        def serving() -> bool:
            try:
                return urllib.request.urlopen(f"http://{metrics}/metrics", timeout=2).status == 200
            except OSError:
                return False
        wait_for(serving, "the config file's metrics address to serve")
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
