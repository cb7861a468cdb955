"""The Dockerfile promises what issue 6 asks of the image: a slim Python base holding only the
installed wheel, a non-root user, a data volume, the broker and metrics ports, a health check
and ``tslog-broker`` as the entry point, configured by ``TSLOG_*`` variables.

No Docker engine runs here, so the file is checked by reading it; test_wheel_install.py runs
its pip commands for real.
"""

from __future__ import annotations

import json
import shlex
import tomllib

import pytest

from tslog.broker.config import ConfigError, load_config, parse_host_port

from tests.deploy.deployfiles import (
    DOCKERFILE, ROOT, dockerfile_instructions, env_values, final_stage, pip_command,
    run_commands,
)

INSTRUCTIONS = dockerfile_instructions(DOCKERFILE.read_text())
FINAL = final_stage(INSTRUCTIONS)
ENV = env_values(FINAL)


def only(keyword: str) -> str:
    found = [i.arguments for i in FINAL if i.keyword == keyword]
    assert len(found) == 1, f"{keyword}: {found}"
    return found[0]


def console_scripts() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def test_builder_makes_a_wheel_and_the_runtime_stage_starts_from_slim_python():
    froms = [i.arguments.split() for i in INSTRUCTIONS if i.keyword == "FROM"]
    assert len(froms) == 2
    assert froms[0][0] == froms[1][0] == "python:3.11-slim"
    builder = froms[0][2]
    wheel = pip_command(run_commands([i for i in INSTRUCTIONS if i.stage == 0]), "wheel")
    assert "--no-deps" in wheel and wheel[-1] == "."
    copies = [i.arguments for i in FINAL if i.keyword in ("COPY", "ADD")]
    assert copies == [f"--from={builder} /wheels /tmp/wheels"], "runtime stage copies the source"


def test_runtime_installs_only_the_wheel_into_a_venv_on_the_path():
    commands = run_commands(FINAL)
    install = pip_command(commands, "install")
    assert install[-1].endswith(".whl") and install[-1].startswith("/tmp/wheels/")
    venv = next(c for c in commands if c[1:3] == ["-m", "venv"])[3]
    assert install[0] == f"{venv}/bin/python"
    assert ENV["PATH"].split(":")[0] == f"{venv}/bin"


def test_runs_as_a_non_root_user_that_owns_the_data_volume():
    user = only("USER")
    assert user not in ("root", "0")
    commands = run_commands(FINAL)
    useradd = next(c for c in commands if c[0] == "useradd")
    assert useradd[-1] == user and "--system" in useradd
    volumes = json.loads(only("VOLUME"))
    assert volumes == [ENV["TSLOG_DATA_DIR"]]
    assert ["chown", f"{user}:{user}", ENV["TSLOG_DATA_DIR"]] in commands


def test_exposed_ports_are_the_ones_the_broker_listens_on():
    exposed = {int(port) for port in only("EXPOSE").split()}
    listen_host, listen_port = parse_host_port(ENV["TSLOG_LISTEN"])
    metrics_host, metrics_port = parse_host_port(ENV["TSLOG_METRICS_LISTEN"])
    assert exposed == {listen_port, metrics_port} == {9092, 9308}
    assert listen_host == metrics_host == "0.0.0.0"  # reachable from outside the container


def test_the_image_environment_is_a_valid_broker_configuration():
    tslog_env = {k: v for k, v in ENV.items() if k.startswith("TSLOG_")}
    config, ignored = load_config({}, None, {**tslog_env, "TSLOG_ALLOW_ANONYMOUS": "true"})
    assert ignored == []
    assert config.data_dir == "/var/lib/tslog"
    assert config.metrics_listen == "0.0.0.0:9308"


def test_the_image_alone_refuses_to_start_open_on_every_address_and_says_what_to_do():
    """No authentication in the image's defaults and no allow_anonymous: protected mode. The
    header's docker run example and its note name the way out, TSLOG_ALLOW_ANONYMOUS=true."""
    tslog_env = {k: v for k, v in ENV.items() if k.startswith("TSLOG_")}
    assert "TSLOG_ALLOW_ANONYMOUS" not in tslog_env
    with pytest.raises(ConfigError, match="protected mode"):
        load_config({}, None, tslog_env)
    header = DOCKERFILE.read_text().split("FROM ")[0]
    run = next(line for line in header.splitlines() if "docker run" in line)
    assert "-e TSLOG_ALLOW_ANONYMOUS=true" in run and "-p 127.0.0.1:9092:9092" in run
    assert "protected mode" in header and "docs/security.md" in header


def test_entrypoint_and_healthcheck_use_installed_console_scripts():
    scripts = console_scripts()
    entrypoint = json.loads(only("ENTRYPOINT"))
    assert entrypoint == ["tslog-broker"] and entrypoint[0] in scripts
    healthcheck = only("HEALTHCHECK")
    options, _, command = healthcheck.partition(" CMD ")
    assert "--interval=" in options and "--timeout=" in options
    assert shlex.split(command)[0] in scripts
    assert "${TSLOG_LISTEN##*:}" in command  # follows the listen port, whatever it is set to


def test_dockerignore_keeps_out_local_state_but_not_what_the_wheel_needs():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", "**/.venv", "tslog-data", "build", "dist"} <= ignored
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {"pyproject.toml", project["project"]["readme"],
              *project["tool"]["setuptools"]["package-dir"].values(),
              *(f"{m}.py" for m in project["tool"]["setuptools"]["py-modules"])}
    assert not needed & ignored
