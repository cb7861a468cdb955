"""The example of docs/security.md's "Authentication (SASL/SCRAM)" section runs as written
(only the broker address is replaced) against a broker with SASL on, and does what it says:
the new user exists and logs in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers.broker_process import BrokerProcess

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def section_example() -> str:
    text = DOC.read_text()
    start = text.index("\n## Authentication (SASL/SCRAM)\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_the_authentication_example_runs(tmp_path):
    (tmp_path / "users").write_text("admin:admin-doc-password\n")
    broker = BrokerProcess(tmp_path / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-512", "sasl_bootstrap_users_file": tmp_path / "users"})
    broker.start()
    try:
        source = section_example().replace("127.0.0.1:9092", broker.bootstrap)
        env = {**os.environ, "TSLOG_ADMIN_PASSWORD": "admin-doc-password",
               "ORDERS_APP_PASSWORD": "orders-doc-password"}
        done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True,
                              timeout=60, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.splitlines() == ["['admin', 'orders-app']", "orders-app logged in"]
        assert "authenticated as User:orders-app" in broker.log_text()
        assert "orders-doc-password" not in broker.log_text()
    finally:
        broker.cleanup()
