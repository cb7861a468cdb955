"""deploy/make-secrets.sh run once per test session into a temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.deploy.deployfiles import DEPLOY


def run_make_secrets(directory) -> subprocess.CompletedProcess:
    """The script as an operator runs it (the tslog venv's python for bcrypt)."""
    result = subprocess.run([str(DEPLOY / "make-secrets.sh"), str(directory)],
                            env={**os.environ, "PYTHON": sys.executable},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="session")
def made_secrets(tmp_path_factory):
    directory = tmp_path_factory.mktemp("deploy") / "secrets"
    run_make_secrets(directory)
    return directory
