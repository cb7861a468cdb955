"""The systemd unit and the example broker configs: the unit runs the installed console script
with the example config, keeps data in its state directory, stops with SIGTERM inside its
timeout and does not restart-loop on a bad config; deploy/cluster/ holds three brokers that can
run side by side on 127.0.0.1 against one etcd.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import sys
import tomllib
from pathlib import Path

from tslog.broker.config import parse_host_port
from tslog.client import Admin
from tslog.client.security import Security

from tests.deploy.deployfiles import (
    DEPLOY, DOCKERFILE, ROOT, broker_config_from_toml, dockerfile_instructions, final_stage,
    run_commands, systemd_unit, yaml_documents,
)
from tests.helpers.broker_process import BrokerProcess, free_port

UNIT = systemd_unit(DEPLOY / "systemd" / "tslog-broker.service")
SERVICE = dict(UNIT["Service"])  # last value wins, as in systemd for single-valued keys
EXAMPLE = DEPLOY / "systemd" / "broker.toml"
CLUSTER = [DEPLOY / "cluster" / f"broker-{n}.toml" for n in (1, 2, 3)]


def test_unit_runs_the_installed_broker_with_the_example_config():
    program, *args = SERVICE["ExecStart"].split()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert program.rpartition("/")[2] == "tslog-broker" in scripts
    # the same venv location as the image, so one set of instructions fits both
    image_venv = next(c for c in run_commands(final_stage(dockerfile_instructions(
        DOCKERFILE.read_text()))) if c[1:3] == ["-m", "venv"])[3]
    assert program == f"{image_venv}/bin/tslog-broker"
    assert args == ["--config", f"/etc/{SERVICE['ConfigurationDirectory']}/{EXAMPLE.name}"]


def test_data_lives_in_the_state_directory_owned_by_a_dedicated_user():
    config = broker_config_from_toml(EXAMPLE.read_text())
    state = f"/var/lib/{SERVICE['StateDirectory']}"
    assert config.data_dir == state == SERVICE["WorkingDirectory"]
    assert SERVICE["User"] == SERVICE["Group"] == "tslog"
    assert SERVICE["NoNewPrivileges"] == "yes" and SERVICE["ProtectSystem"] == "strict"
    assert SERVICE["CapabilityBoundingSet"] == ""


def test_stop_is_a_sigterm_with_time_for_the_graceful_shutdown():
    config = broker_config_from_toml(EXAMPLE.read_text())
    assert SERVICE["KillSignal"] == "SIGTERM"
    timeout_s = int(SERVICE["TimeoutStopSec"].removesuffix("s"))
    assert timeout_s * 1000 > config.shutdown_grace_ms
    assert int(SERVICE["LimitNOFILE"]) >= 65536


def test_a_bad_config_exits_with_the_status_the_unit_does_not_restart_on(tmp_path):
    assert SERVICE["Restart"] == "on-failure"
    bad = tmp_path / "broker.toml"
    bad.write_text('retention_ms = "forever"\n' + EXAMPLE.read_text())  # a typo'd top-level key
    result = subprocess.run([sys.executable, "-m", "tslog.broker", "--config", str(bad)],
                            capture_output=True, timeout=60, cwd=tmp_path)
    assert b"unknown config key 'retention_ms'" in result.stderr
    assert str(result.returncode) == SERVICE["RestartPreventExitStatus"]


def test_local_cluster_configs_run_three_brokers_side_by_side_on_loopback():
    configs = [broker_config_from_toml(path.read_text()) for path in CLUSTER]
    assert [c.node_id for c in configs] == [1, 2, 3]
    listens = [parse_host_port(c.listen) for c in configs]
    assert listens == [("127.0.0.1", 9092), ("127.0.0.1", 9093), ("127.0.0.1", 9094)]
    assert [c.advertised_listen for c in configs] == [c.listen for c in configs]
    metrics = [parse_host_port(c.metrics_listen) for c in configs]
    assert metrics == [("127.0.0.1", 9308), ("127.0.0.1", 9309), ("127.0.0.1", 9310)]
    assert len({c.data_dir for c in configs}) == 3
    assert {c.etcd_endpoints for c in configs} == {"127.0.0.1:2379"}
    assert {c.cluster_name for c in configs} == {"tslog"}


def test_local_prometheus_scrapes_the_three_local_brokers():
    config = yaml_documents(DEPLOY / "cluster" / "prometheus.yml")[0]
    targets = [t for job in config["scrape_configs"] for group in job["static_configs"]
               for t in group["targets"]]
    configs = [broker_config_from_toml(path.read_text()) for path in CLUSTER]
    assert targets == [c.metrics_listen for c in configs]


def test_systemd_accepts_every_directive_of_the_unit(tmp_path):
    """systemd's own parser (``systemd-analyze verify``; Debian's systemd package, which
    .ci/run installs) finds no unknown or malformed directive. It also requires ExecStart's
    program to exist, so the unit is checked pointing at this environment's tslog-broker."""
    assert shutil.which("systemd-analyze"), "systemd-analyze missing: .ci/run installs systemd"
    source = DEPLOY / "systemd" / "tslog-broker.service"
    installed = str(Path(sys.executable).parent / "tslog-broker")
    unit = tmp_path / source.name
    unit.write_text(source.read_text().replace(SERVICE["ExecStart"].split()[0], installed))
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            timeout=60)
    output = (result.stdout + result.stderr).decode()
    assert result.returncode == 0 and output.strip() == "", output


def test_secrets_come_from_systemd_credentials_and_reload_is_sighup():
    """broker.toml configures TLS, SCRAM and ACLs with every key and password a file of the
    unit's credentials directory (LoadCredential=), and `systemctl reload` is SIGHUP."""
    config = broker_config_from_toml(EXAMPLE.read_text())
    assert config.allow_anonymous is False and config.authorizer_enabled
    assert config.sasl_mechanism_list and config.tls_cert_file
    credentials_dir = f"/run/credentials/{DEPLOY.joinpath('systemd', 'tslog-broker.service').name}"
    loaded = {}
    for key, value in UNIT["Service"]:
        if key == "LoadCredential":
            name, _, source = value.partition(":")
            assert source == f"/etc/{SERVICE['ConfigurationDirectory']}/credentials/{name}"
            loaded[name] = source
    for setting in ("tls_cert_file", "tls_key_file", "tls_ca_file", "sasl_bootstrap_users_file",
                    "inter_broker_sasl_password_file", "metrics_web_config_file"):
        directory, _, name = getattr(config, setting).rpartition("/")
        assert directory == credentials_dir and name in loaded, setting
    assert {"broker.pem", "broker.key"} <= set(loaded)  # metrics-web.yml's relative files
    assert SERVICE["ExecReload"] == "/bin/kill -HUP $MAINPID"


def test_the_example_config_runs_with_the_generated_credentials(tmp_path, made_secrets):
    """broker.toml, its credentials directory laid out from make-secrets.sh's files (a
    broker's certificate as broker.pem/.key), listening on loopback: it starts and logs in."""
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    sources = {"broker.pem": "broker-1.pem", "broker.key": "broker-1.key"}
    for key, value in UNIT["Service"]:
        if key == "LoadCredential":
            name = value.partition(":")[0]
            shutil.copy(made_secrets / sources.get(name, name), credentials / name)
    text = EXAMPLE.read_text().replace("/run/credentials/tslog-broker.service", str(credentials))
    (tmp_path / "broker.toml").write_text(text)
    port = free_port()
    context = ssl.create_default_context(cafile=str(credentials / "ca.pem"))
    broker = BrokerProcess(tmp_path / "data", port=port, ssl_context=context,
                           args=["--config", str(tmp_path / "broker.toml")],
                           env={"TSLOG_METRICS_LISTEN": f"127.0.0.1:{free_port()}"})
    try:
        broker.start()
        admin_password = tmp_path / "admin-password"
        shutil.copy(made_secrets / "admin-password", admin_password)
        login = Security(protocol="SASL_SSL", ssl_cafile=str(credentials / "ca.pem"),
                         sasl_mechanism="SCRAM-SHA-512", sasl_username="admin",
                         sasl_password=admin_password.read_text())
        with Admin(broker.bootstrap, security=login) as admin:
            admin.create_topic("events", partitions=1)
            assert "events" in admin.list_topics()
        broker.terminate()
    finally:
        broker.stop()
