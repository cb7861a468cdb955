"""docs/security.md's "## TLS" example runs as written, in order: ``trustme`` writes the
certificates, a broker starts from the TOML block, the ``tslog`` commands use the properties
block through ``--command-config``, and the Python block reads back both records. Only the
port is replaced (the broker listens on a free one), in every block alike."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.tls import Security

ROOT = Path(__file__).resolve().parents[2]
DOC_ADDRESS = "127.0.0.1:9093"


def tls_section() -> str:
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    start = text.index("\n## TLS\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def blocks(kind: str, text: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", text, flags=re.S)


def run(command: str, cwd: Path, stdin: bytes | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    result = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, timeout=60,
                            input=stdin, env={**env, "PATH": f"{Path(sys.executable).parent}:"
                                                             f"{env.get('PATH', '')}"})
    assert result.returncode == 0, f"{command}: {result.stderr.decode()}"
    return result.stdout.decode()


@pytest.mark.slow
def test_the_tls_example_runs_as_written(tmp_path, monkeypatch):
    address = f"127.0.0.1:{free_port()}"
    section = tls_section().replace(DOC_ADDRESS, address)
    make_certs, commands = blocks("sh", section)
    run(make_certs.strip(), tmp_path)
    toml = blocks("toml", section)[0]  # the broker's settings (the mapping example is later)
    (tmp_path / "broker.toml").write_text(toml)
    (properties,) = blocks("properties", section)
    (tmp_path / "client.properties").write_text(properties)
    certs = tmp_path / "certs"
    broker = BrokerProcess(tmp_path / "data", port=int(address.rsplit(":", 1)[1]),
                           args=["--config", str(tmp_path / "broker.toml")],
                           ssl_context=Security(protocol="SSL",
                                                ssl_cafile=str(certs / "client.pem")).ssl_context())
    monkeypatch.chdir(tmp_path)  # the TOML names the certificates relative to it
    try:
        broker.start()
        outputs = [run(line, tmp_path) for line in commands.strip().splitlines()]
        assert outputs[-1].strip() == '{"amount": 12}'
        (example,) = blocks("python", section)
        printed = run(f"{shlex.quote(sys.executable)} -c {shlex.quote(example)}", tmp_path)
        assert printed.strip() == "[b'{\"amount\": 12}', b'{\"amount\": 30}']"
        assert "(TLS)" in broker.log_text()
    finally:
        broker.cleanup()
