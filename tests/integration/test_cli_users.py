"""``tslog users`` against a real broker: create (password on stdin, never a flag), list,
delete; the users it made can log in once the broker turns SASL on, the deleted one not.

The broker runs without SASL while the CLI manages its users (the CLI's own login options are
the shared ``--command-config``), then restarts with ``sasl_mechanisms`` on: the users are
in its data directory, so they survive the restart too.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tslog.client import Admin
from tslog.client.errors import SaslAuthenticationFailedError
from tslog.client.security import Security


def tslog(broker, *args, stdin: bytes | None = None, env: dict | None = None):
    command = [sys.executable, "-m", "tslog.client.cli", *args, "--bootstrap",
               broker.bootstrap]
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    environment.update(env or {})
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60,
                          env=environment)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def login(broker, user: str, password: str) -> list[str]:
    security = Security(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                        sasl_username=user, sasl_password=password)
    with Admin(broker.bootstrap, security=security) as admin:
        return admin.list_topics()


@pytest.mark.slow
def test_users_create_list_delete_then_log_in(broker):
    created = ok(tslog(broker, "users", "create", "app", "--mechanism", "SCRAM-SHA-256",
                       "--password-stdin", stdin=b"app-password-1\n"))
    assert "stored SCRAM-SHA-256 credential of user app" in created
    ok(tslog(broker, "users", "create", "old", "--mechanism", "SCRAM-SHA-256",
             "--iterations", "4096", env={"TSLOG_USER_PASSWORD": "old-password-1"}))
    listed = ok(tslog(broker, "users", "list"))
    assert "app\tSCRAM-SHA-256 (8192 iterations)" in listed
    assert "old\tSCRAM-SHA-256 (4096 iterations)" in listed
    assert "password" not in listed
    assert "deleted user old" in ok(tslog(broker, "users", "delete", "old"))
    assert "old" not in ok(tslog(broker, "users", "list"))

    no_password = tslog(broker, "users", "create", "x", stdin=b"")
    assert no_password.returncode == 2 and b"--password-stdin" in no_password.stderr
    bad = tslog(broker, "users", "create", "x", "--iterations", "99", "--password-stdin",
                stdin=b"x-password\n")
    assert bad.returncode == 1 and b"iterations must be 4096 to 16384" in bad.stderr
    assert b"x-password" not in bad.stderr
    missing = tslog(broker, "users", "delete", "nobody")
    assert missing.returncode == 1

    broker.restart(env={**broker.env, "TSLOG_SASL_MECHANISMS": "SCRAM-SHA-256"})
    assert login(broker, "app", "app-password-1") == []
    with pytest.raises(SaslAuthenticationFailedError):
        login(broker, "old", "old-password-1")
