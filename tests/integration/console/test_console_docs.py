"""docs/console.md's commands run as written, in order, against a real broker: the read-only
console, the one with write actions, a users-file line made from a password on stdin, and the
console beyond loopback with that users file and TLS; and its protected-mode message is the
one the command prints.

Only addresses are supplied: the broker through ``$TSLOG_BOOTSTRAP``, a free port through
``$TSLOG_CONSOLE_LISTEN`` or in place of the documented 8080; the TLS files the last command
names are made here (``trustme``) in the directory the commands run in."""

from __future__ import annotations

import base64
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import trustme

from tests.helpers.broker_process import free_port

pytestmark = [pytest.mark.console, pytest.mark.timeout(240)]

DOC = Path(__file__).resolve().parents[3] / "docs" / "console.md"
PASSWORD = "a long random console password"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _get(url: str, context=None, auth: bool = False) -> int:
    headers = {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(
            f"ops:{PASSWORD}".encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30,
                                    context=context) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _serve(line: str, env: dict, cwd: Path, url: str, context=None) -> subprocess.Popen:
    process = subprocess.Popen(["bash", "-c", "exec " + line], env=env, cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read().decode()
        try:
            _get(url + "/", context)
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError(f"{line!r} did not serve {url}")


def _stop(process: subprocess.Popen) -> str:
    process.terminate()
    output, _ = process.communicate(timeout=30)
    return output.decode()


def _environment(bootstrap: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return {**env, "TSLOG_BOOTSTRAP": bootstrap, "CONSOLE_PASSWORD": PASSWORD}


def test_the_documented_commands_run_in_order(cluster_data, tmp_path):
    (block,) = _blocks("sh")
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 4
    env = _environment(cluster_data.broker.bootstrap)
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "console.pem"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "console-key.pem"))
    context = ssl.create_default_context()
    ca.configure_trust(context)

    read_only, writable, hashing, beyond = lines
    port = free_port()
    process = _serve(read_only, {**env, "TSLOG_CONSOLE_LISTEN": f"127.0.0.1:{port}"},
                     tmp_path, f"http://127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    assert _get(url + "/topics/events") == 200
    assert _get(url + "/groups/g/reset?topic=events&to=-1m") == 403
    assert "read-only" in _stop(process)

    port = free_port()
    process = _serve(writable, {**env, "TSLOG_CONSOLE_LISTEN": f"127.0.0.1:{port}"},
                     tmp_path, f"http://127.0.0.1:{port}")
    assert _get(f"http://127.0.0.1:{port}/groups/g/reset?topic=events&to=-1m") == 200
    assert "write actions enabled" in _stop(process)

    subprocess.run(["bash", "-c", hashing], env=env, cwd=tmp_path, check=True, timeout=60)
    users = (tmp_path / "console-users").read_text()
    assert users.startswith("ops:pbkdf2_sha256$") and PASSWORD not in users

    port = free_port()
    assert "0.0.0.0:8080" in beyond
    process = _serve(beyond.replace("0.0.0.0:8080", f"0.0.0.0:{port}"), env, tmp_path,
                     f"https://127.0.0.1:{port}", context)
    url = f"https://127.0.0.1:{port}"
    assert _get(url + "/", context) == 401
    assert _get(url + "/", context, auth=True) == 200
    assert PASSWORD not in _stop(process)


def test_the_documented_refusal_is_what_the_command_prints(cluster_data):
    (text,) = [block for block in _blocks("text") if "refusing to serve" in block]
    result = subprocess.run(
        [sys.executable, "-m", "tslog.client.cli", "console", "--listen",
         f"0.0.0.0:{free_port()}"], env=_environment(cluster_data.broker.bootstrap),
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip() == text.strip()
