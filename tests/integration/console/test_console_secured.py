"""The console in front of a SASL/SCRAM broker: it logs in with the CLI's ``--command-config``
file, serves every page, and the password appears in no page, in none of its output and not
on its command line; started with a wrong password it stops with a line that names the
failure, not the password."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.console_process import ConsoleProcess
from tslog.client import Admin, Producer, TopicPartition
from tslog.client.security import Security

pytestmark = [pytest.mark.console, pytest.mark.timeout(240)]

PASSWORD = "console-Secret-9876"


def _properties(path: Path, password: str) -> Path:
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                    f"sasl.username=ops\nsasl.password={password}\n")
    return path


def test_a_console_of_a_scram_cluster_never_shows_the_password(tmp_path):
    users = tmp_path / "users"
    users.write_text(f"ops:{PASSWORD}\n")
    broker = BrokerProcess(tmp_path / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-512", "sasl_bootstrap_users_file": users})
    broker.start()
    try:
        security = Security(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                            sasl_username="ops", sasl_password=PASSWORD)
        with Admin(broker.bootstrap, security=security) as admin:
            admin.create_topic("orders", partitions=2)
        with Producer(broker.bootstrap, security=security, linger_ms=0) as producer:
            producer.send("orders", b"first", partition=0).get(10)
        with Admin(broker.bootstrap, security=security) as admin:
            admin.alter_consumer_group_offsets("billing", {TopicPartition("orders", 0): 0})
        config = _properties(tmp_path / "client.properties", PASSWORD)
        console = ConsoleProcess(broker.bootstrap, tmp_path, "--command-config", str(config))
        try:
            assert PASSWORD not in Path(f"/proc/{console.process.pid}/cmdline").read_text()
            for path in ("/", "/topics", "/topics/orders", "/find?topic=orders&time=-1h",
                         "/groups", "/groups/billing"):
                status, body = console.get(path)
                assert status == 200, (path, body[-500:])
                assert PASSWORD not in body
            assert "first" in console.get("/find?topic=orders&time=-1h")[1]
        finally:
            console.stop()
        assert PASSWORD not in console.log_text()

        wrong = _properties(tmp_path / "wrong.properties", "not-" + PASSWORD)
        result = subprocess.run(
            [sys.executable, "-m", "tslog.client.cli", "console", "--bootstrap",
             broker.bootstrap, "--command-config", str(wrong), "--listen",
             f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=120)
        assert result.returncode == 1
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("tslog: error:") and "uthentication" in line, line
        assert PASSWORD not in result.stdout + result.stderr
    finally:
        broker.cleanup()
