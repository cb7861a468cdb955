"""deploy/make-secrets.sh's material works as deploy/docker-compose.yml uses it: the script
runs into a temporary directory, the compose secrets of ``broker-1`` are laid out as compose
mounts them (``/run/secrets/<target>``, here a temporary directory), and ONE real broker
starts with broker-1's environment, only addresses (loopback, free ports) and the secrets
path rewritten, against a real etcd serving TLS with client certificates as the compose etcd
does. Then the compose health check passes, the admin's --command-config file produces and
consumes over TLS+SCRAM, a client without a login is refused, Prometheus' basic auth user
reads /metrics over https and nothing secret reaches the broker's log.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tslog.client import Admin, Consumer, Producer
from tslog.client.errors import ConnectionLostError
from tslog.client.security import Security

from tests.deploy.conftest import run_make_secrets
from tests.deploy.deployfiles import DEPLOY
from tests.deploy.test_compose import BROKERS, COMPOSE, SERVICES
from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.etcd_process import EtcdProcess

pytestmark = pytest.mark.slow

RUN_SECRETS = "/run/secrets"


def make_secrets(directory: Path) -> None:
    result = run_make_secrets(directory)
    for user in ("admin", "broker", "healthcheck", "metrics"):
        password = (directory / f"{user}-password").read_text()
        assert password not in result.stdout + result.stderr


def mount_secrets(service: dict, made: Path, mounted: Path) -> None:
    """Lay out the service's compose secrets as compose does, with /run/secrets -> mounted."""
    mounted.mkdir()
    for entry in service["secrets"]:
        source, target = (entry, entry) if isinstance(entry, str) else (
            entry["source"], entry.get("target", entry["source"]))
        file = DEPLOY / COMPOSE["secrets"][source]["file"]
        assert file.parent == DEPLOY / "secrets", file
        text = (made / file.name).read_text().replace(RUN_SECRETS, str(mounted))
        (mounted / target).write_text(text)


def test_broker_1_runs_secured_with_the_generated_material(tmp_path):
    made = tmp_path / "secrets"
    make_secrets(made)
    before = {p.name: p.read_bytes() for p in made.iterdir()}
    make_secrets(made)  # idempotent: nothing is replaced
    assert {p.name: p.read_bytes() for p in made.iterdir()} == before

    mounted = tmp_path / "run-secrets"
    mount_secrets(SERVICES["etcd"], made, tmp_path / "etcd-secrets")
    etcd_dir = tmp_path / "etcd-secrets"
    etcd = EtcdProcess(tmp_path / "etcd", tls=(str(etcd_dir / "etcd.pem"),
                                               str(etcd_dir / "etcd.key"),
                                               str(etcd_dir / "ca.pem"))).start()
    service = BROKERS["broker-1"]
    mount_secrets(service, made, mounted)
    port, metrics_port = free_port(), free_port()
    env = {k: str(v).replace(RUN_SECRETS, str(mounted))
           for k, v in service["environment"].items()}
    env.update(TSLOG_LISTEN=f"127.0.0.1:{port}", TSLOG_ADVERTISED_LISTEN=f"127.0.0.1:{port}",
               TSLOG_METRICS_LISTEN=f"127.0.0.1:{metrics_port}",
               TSLOG_ETCD_ENDPOINTS=etcd.endpoint, TSLOG_DATA_DIR=str(tmp_path / "data"))
    probe_context = ssl.create_default_context(cafile=str(mounted / "ca.pem"))
    broker = BrokerProcess(tmp_path / "data", port=port, env=env, ssl_context=probe_context)
    try:
        broker.start()
        bootstrap = broker.bootstrap

        # the compose health check, as written, pointed at this broker's port
        check = service["healthcheck"]["test"][1].replace(RUN_SECRETS, str(mounted)).replace(
            "127.0.0.1:9092", bootstrap)
        path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
        result = subprocess.run(["/bin/sh", "-c", check], env={**os.environ, "PATH": path},
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr

        admin_login = Security.from_file(mounted / "admin.properties")
        with Admin(bootstrap, security=admin_login) as admin:
            admin.create_topic("events", partitions=1)
        with Producer(bootstrap, security=admin_login) as producer:
            producer.send("events", b"over TLS and SCRAM").result()
        with Consumer(bootstrap, security=admin_login, auto_offset_reset="earliest") as consumer:
            consumer.subscribe(["events"])
            records = []
            for _ in range(40):
                records += consumer.poll(250)
                if records:
                    break
        assert [r.value for r in records] == [b"over TLS and SCRAM"]

        # TLS without a login: the broker answers nothing but ApiVersions and closes
        no_login = Security(protocol="SSL", ssl_cafile=str(mounted / "ca.pem"))
        with pytest.raises(ConnectionLostError):
            with Admin(bootstrap, security=no_login) as admin:
                admin.list_topics()

        # the healthcheck user has no ACLs: it sees no topics
        result = subprocess.run(
            ["tslog", "--command-config", str(mounted / "healthcheck.properties"),
             "--bootstrap", bootstrap, "topics", "list"],
            env={**os.environ, "PATH": path}, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and "events" not in result.stdout, result.stderr

        # Prometheus' view: https with the CA, basic auth with the generated password
        metrics_password = (made / "metrics-password").read_text()
        url = f"https://127.0.0.1:{metrics_port}/metrics"
        request = urllib.request.Request(url, headers={"Authorization": "Basic " + base64.
                                                       b64encode(f"prometheus:{metrics_password}"
                                                                 .encode()).decode()})
        with urllib.request.urlopen(request, context=probe_context, timeout=10) as response:
            assert response.status == 200 and b"tslog_" in response.read()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, context=probe_context, timeout=10)
        assert refused.value.code == 401

        broker.terminate()
        log = broker.log_text()
        for name in ("admin", "broker", "healthcheck", "metrics"):
            assert (made / f"{name}-password").read_text() not in log
        assert "PRIVATE KEY" not in log
        assert "authenticated as User:admin" in log
    finally:
        broker.stop()
        etcd.stop()
        shutil.rmtree(made, ignore_errors=True)
