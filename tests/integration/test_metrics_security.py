"""/metrics behind TLS and basic auth (``metrics_web_config_file``), as an operator runs it:
a real Prometheus with ``scheme: https``, ``tls_config`` and ``basic_auth`` scrapes a real
broker; a scraper without credentials gets 401; plain HTTP to the TLS port gets nothing;
a broken web config stops the broker at start with one line naming the file.

One broker for the module (certificates from ``trustme``, the bcrypt hash made here)."""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import time
from pathlib import Path

import bcrypt
import pytest
import trustme
import yaml

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.prometheus import PrometheusProcess

pytestmark = pytest.mark.timeout(90)

USER, PASSWORD = "prometheus", "scrape-secret-4e1f"
DEPLOYED_JOB = Path(__file__).parents[2] / "deploy" / "prometheus" / "prometheus-secured.yml"


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A broker serving /metrics over TLS with one basic-auth user; yields a namespace."""
    directory = tmp_path_factory.mktemp("metrics-security")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    cert.cert_chain_pems[0].write_to_path(str(directory / "broker.pem"))
    cert.private_key_pem.write_to_path(str(directory / "broker.key"))
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    (directory / "web.yml").write_text(
        "tls_server_config:\n  cert_file: broker.pem\n  key_file: broker.key\n"
        f"basic_auth_users:\n  {USER}: '{hashed}'\n")
    port = free_port()
    broker = BrokerProcess(directory / "data", config={
        "metrics_listen": f"127.0.0.1:{port}",
        "metrics_web_config_file": str(directory / "web.yml")})
    broker.start()
    broker.metrics_port = port
    broker.directory = directory
    yield broker
    broker.cleanup()


def _get(port: int, ca_file: str, authorization: str | None) -> http.client.HTTPResponse:
    context = ssl.create_default_context(cafile=ca_file)
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    headers = {"Authorization": authorization} if authorization else {}
    connection.request("GET", "/metrics", headers=headers)
    response = connection.getresponse()
    response.body = response.read()
    connection.close()
    return response


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_prometheus_scrapes_over_tls_with_basic_auth(secured):
    """With the secured job of deploy/prometheus/prometheus-secured.yml, as written: its
    relative secret paths are filled in beside the test's Prometheus config."""
    (job,) = yaml.safe_load(DEPLOYED_JOB.read_text())["scrape_configs"]
    directory = secured.directory / "prometheus"
    ca_file = directory / job["tls_config"]["ca_file"]
    password_file = directory / job["basic_auth"]["password_file"]
    ca_file.parent.mkdir(parents=True, exist_ok=True)
    ca_file.write_bytes((secured.directory / "ca.pem").read_bytes())
    password_file.write_text(PASSWORD + "\n")
    assert job["basic_auth"]["username"] == USER
    prometheus = PrometheusProcess(
        directory, [f"127.0.0.1:{secured.metrics_port}"],
        scrape={key: job[key] for key in ("scheme", "tls_config", "basic_auth")})
    prometheus.start()
    try:
        deadline = time.monotonic() + 20
        samples = []
        while time.monotonic() < deadline:
            samples = prometheus.query('tslog_open_connections{job="tslog"}')
            if samples:
                break
            time.sleep(0.2)
        assert samples, prometheus.log_path.read_text(errors="replace")
        assert prometheus.query('up{job="tslog"}')[0][1] == 1
    finally:
        prometheus.stop()
    assert PASSWORD not in secured.log_text()
    assert _basic(USER, PASSWORD).split()[1] not in secured.log_text()


def test_a_scrape_without_the_right_credentials_gets_401(secured):
    ca_file = str(secured.directory / "ca.pem")
    for authorization in (None, _basic(USER, "wrong"), _basic("nobody", PASSWORD),
                          "Basic not-base64!", "Bearer x"):
        response = _get(secured.metrics_port, ca_file, authorization)
        assert response.status == 401, authorization
        assert response.getheader("WWW-Authenticate", "").startswith("Basic")
        assert b"tslog_" not in response.body
    good = _get(secured.metrics_port, ca_file, _basic(USER, PASSWORD))
    assert good.status == 200 and b"tslog_open_connections" in good.body


def test_plain_http_to_the_tls_port_gets_no_metrics(secured):
    with socket.create_connection(("127.0.0.1", secured.metrics_port), timeout=10) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    assert b"tslog_" not in received and not received.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("text, expected", [
    ("basic_auth_user:\n  a: b\n", "unknown key 'basic_auth_user'"),
    ("basic_auth_users:\n  a: plain-password\n", "is not a bcrypt hash"),
    ("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing.key\n",
     "cannot load tls_server_config cert_file"),
])
def test_a_bad_web_config_stops_the_start_naming_the_file(tmp_path, text, expected):
    web = tmp_path / "web.yml"
    web.write_text(text)
    broker = BrokerProcess(tmp_path / "data", config={
        "metrics_listen": f"127.0.0.1:{free_port()}", "metrics_web_config_file": str(web)})
    broker.launch()
    assert broker.exit_code() == 2
    output = broker.log_text()
    assert f"metrics web config {web}" in output and expected in output
    assert "plain-password" not in output and "Traceback" not in output
