"""The image's install, done for real: build the wheel from the Docker build context, install
it into a fresh venv with the Dockerfile's own pip commands, start ``tslog-broker`` from that
venv configured by ``TSLOG_*`` variables only, use it with the installed ``tslog`` CLI, and
scrape its metrics (every metric the alerting rules use must be there).

This machine kind has no Docker engine, so this is how CI shows the image would work: the
commands are lifted out of the Dockerfile (not retyped here), the build sees only what
.dockerignore lets through, and the installed broker must not import anything from the
source tree.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.deployfiles import (
    DEPLOY, DOCKERFILE, copy_build_context, dockerfile_instructions, env_values, final_stage,
    pip_command, run_commands, yaml_documents,
)
from tests.helpers.broker_process import free_port, probe

pytestmark = pytest.mark.slow

INSTRUCTIONS = dockerfile_instructions(DOCKERFILE.read_text())
FINAL = final_stage(INSTRUCTIONS)
READY_TIMEOUT_S = 30.0


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without anything that could point Python at the source
    tree or configure the broker, plus ``extra``."""
    dropped = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    environment = {k: v for k, v in os.environ.items()
                   if k not in dropped and not k.startswith("TSLOG_")}
    environment.update(extra)
    return environment


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} from a Prometheus text exposition."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def alert_metrics() -> set[str]:
    """The tslog_* metric names the alerting rules are written against."""
    groups = yaml_documents(DEPLOY / "prometheus" / "alerts.yml")[0]["groups"]
    return {name for group in groups for rule in group["rules"]
            for name in re.findall(r"\btslog_[a-z_]+", rule["expr"])}


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, timeout=600, **kwargs)
    assert result.returncode == 0, (command, result.stdout.decode(), result.stderr.decode())
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv holding the wheel, installed as the Dockerfile installs it. Returns its path."""
    work = tmp_path_factory.mktemp("image")
    context = copy_build_context(work / "context")
    wheels = work / "wheels"
    venv = work / "venv"

    wheel = pip_command(run_commands([i for i in INSTRUCTIONS if i.stage == 0]), "wheel")
    wheel = [sys.executable, *wheel[1:]]
    wheel[wheel.index("--wheel-dir") + 1] = str(wheels)
    run(wheel, cwd=context, env=clean_environment())

    commands = run_commands(FINAL)
    make_venv = next(c for c in commands if c[1:3] == ["-m", "venv"])
    image_venv = make_venv[3]
    run([sys.executable, "-m", "venv", str(venv)], env=clean_environment())
    install = pip_command(commands, "install")
    built = sorted(wheels.glob(Path(install[-1]).name))
    assert len(built) == 1, f"expected one wheel matching {install[-1]}, got {built}"
    install = [install[0].replace(image_venv, str(venv)), *install[1:-1], str(built[0])]
    run(install, cwd=work, env=clean_environment())
    return venv


def test_installed_package_comes_from_the_venv_not_the_source_tree(installed, tmp_path):
    code = ("import json, tslog.broker.__main__, tslog.client.cli, tslog.protocol; "
            "print(json.dumps([m.__file__ for m in (tslog.broker.__main__, tslog.client.cli,"
            " tslog.protocol)]))")
    result = run([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path,
                 env=clean_environment())
    for path in json.loads(result.stdout):
        assert Path(path).resolve().is_relative_to(installed.resolve()), path
    for script in ("tslog-broker", "tslog"):
        shebang = (installed / "bin" / script).read_text().splitlines()[0]
        assert Path(shebang[2:]).parent == installed / "bin", shebang


def test_broker_from_the_wheel_serves_the_cli_and_passes_the_health_check(installed, tmp_path):
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    bin_dir = installed / "bin"
    metrics_url = f"http://127.0.0.1:{free_port()}/metrics"
    broker_env = clean_environment(TSLOG_DATA_DIR=str(tmp_path / "data"),
                                   TSLOG_LISTEN=bootstrap,
                                   TSLOG_METRICS_LISTEN=metrics_url[7:-8])
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log_file:
        broker = subprocess.Popen([str(bin_dir / "tslog-broker")], cwd=tmp_path, env=broker_env,
                                  stdout=log_file, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not probe("127.0.0.1", port):
            assert broker.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)

        cli_env = clean_environment(TSLOG_BOOTSTRAP=bootstrap)

        def tslog(*args: str, stdin: bytes | None = None) -> str:
            return run([str(bin_dir / "tslog"), *args], input=stdin, cwd=tmp_path,
                       env=cli_env).stdout.decode()

        tslog("topics", "create", "events", "--partitions", "2")
        assert "events" in tslog("topics", "list").split()
        lines = [f"record-{i}" for i in range(50)]
        tslog("produce", "events", stdin="".join(f"{line}\n" for line in lines).encode())
        consumed = [json.loads(row) for row in tslog(
            "consume", "events", "--from-time", "earliest", "--to-time", "now",
            "--format", "json", "--group", "replay").splitlines()]
        assert sorted(r["value"] for r in consumed) == sorted(lines)
        assert (tmp_path / "data" / "events-0").is_dir()  # TSLOG_DATA_DIR was obeyed

        samples = scrape(metrics_url)
        assert samples[("tslog_produced_records_total", (("topic", "events"),))] == 50
        exported = {name for name, _ in samples}
        assert alert_metrics() <= exported, alert_metrics() - exported

        health = next(i.arguments for i in FINAL if i.keyword == "HEALTHCHECK")
        health_command = health.partition(" CMD ")[2]
        health_env = clean_environment(PATH=f"{bin_dir}:{os.environ['PATH']}",
                                       TSLOG_LISTEN=f"0.0.0.0:{port}")
        check = subprocess.run(["/bin/sh", "-c", health_command], env=health_env,
                               capture_output=True, timeout=60)
        assert check.returncode == 0, check.stderr.decode()

        broker.send_signal(signal.SIGTERM)
        assert broker.wait(30) == 0, log_path.read_text()
        check = subprocess.run(["/bin/sh", "-c", health_command], env=health_env,
                               capture_output=True, timeout=60)
        assert check.returncode != 0, "health check passed with the broker stopped"
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait(30)
