"""The /metrics web config (``metrics_web_config_file``): what a bad file tells the operator
(the file, the key, never a hash), and ``MetricsServer.reload`` taking new basic-auth users
for the next scrape while a broken file leaves the running ones in place."""

from __future__ import annotations

import asyncio
import base64
import http.client
import ssl
import threading
import types

import bcrypt
import pytest
import trustme

from tslog.broker.metrics import MetricsServer
from tslog.broker.metrics.web_config import WebConfigError, load_web_config


def _hash(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.mark.parametrize("text, expected", [
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n",
     "unknown key 'cipher_suites' in tls_server_config"),
    ("tls_server_config:\n  cert_file: a\n", "needs both cert_file and key_file"),
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n"
     "  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"),
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequestClientCert\n",
     "'RequestClientCert' is not supported"),
    ("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS11\n",
     "min_version must be TLS12 or TLS13"),
    ("basic_auth_users: [a, b]\n", "basic_auth_users must be a mapping"),
    ("basic_auth_users:\n  alice: '$2b$04$tooshort'\n", "for 'alice' is not a bcrypt hash"),
    ("basic_auth_users:\n  alice: [\n", "is not valid YAML at line"),
    ("- a list\n", "the file must be a mapping"),
])
def test_a_bad_file_is_one_error_naming_the_file_and_the_problem(tmp_path, text, expected):
    path = tmp_path / "web.yml"
    path.write_text(text)
    with pytest.raises(WebConfigError) as raised:
        load_web_config(str(path))
    assert str(path) in str(raised.value) and expected in str(raised.value)
    assert "$2b$04$tooshort" not in str(raised.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(WebConfigError, match="cannot read metrics web config .*missing.yml"):
        load_web_config(str(tmp_path / "missing.yml"))


def test_an_empty_file_secures_nothing(tmp_path):
    path = tmp_path / "web.yml"
    path.write_text("# nothing yet\n")
    web = load_web_config(str(path))
    assert web.tls is None and not web.users and web.check("anyone", "anything")


def _status(port: int, user: str, password: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    connection.request("GET", "/metrics", headers={"Authorization": f"Basic {token}"})
    status = connection.getresponse().status
    connection.close()
    return status


@pytest.fixture
def serving(tmp_path):
    """make(web config path) -> a MetricsServer on a free port, for a broker whose logs are
    closing (the scrape is the process-wide series only); stopped at teardown."""
    loop = asyncio.new_event_loop()
    running = threading.Thread(target=loop.run_forever, daemon=True)
    running.start()
    sources = types.SimpleNamespace(data_dir=str(tmp_path), topics=None,
                                    lifecycle=types.SimpleNamespace(closing=True))
    servers = []

    def make(path) -> MetricsServer:
        servers.append(MetricsServer(sources, loop, "127.0.0.1", 0,
                                     web=load_web_config(str(path))))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()
    loop.call_soon_threadsafe(loop.stop)
    running.join(5)
    loop.close()


def test_reload_takes_new_users_and_keeps_the_old_ones_on_a_broken_file(tmp_path, serving):
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: '{_hash('old')}'\n")
    server = serving(path)
    assert _status(server.port, "prometheus", "old") == 200
    path.write_text(f"basic_auth_users:\n  prometheus: '{_hash('new')}'\n")
    assert server.reload()
    assert _status(server.port, "prometheus", "old") == 401
    assert _status(server.port, "prometheus", "new") == 200
    path.write_text("basic_auth_users:\n  prometheus: not-a-hash\n")
    assert not server.reload()
    assert _status(server.port, "prometheus", "new") == 200


def _https_status(port: int, ca: trustme.CA, client_cert=None) -> int:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    if client_cert is not None:
        client_cert.configure_cert(context)
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        connection.request("GET", "/metrics")
        return connection.getresponse().status
    finally:
        connection.close()


def test_mutual_tls_and_a_reloaded_certificate(tmp_path, serving):
    """RequireAndVerifyClientCert: a scraper without a certificate from client_ca_file gets
    no answer; after the certificate is replaced and reloaded, new connections are served
    with the new one (a scraper trusting only the new CA gets through)."""
    ca, scrapers = trustme.CA(), trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "metrics.pem"))
    scrapers.cert_pem.write_to_path(str(tmp_path / "scrapers.pem"))
    path = tmp_path / "web.yml"
    path.write_text("tls_server_config:\n  cert_file: metrics.pem\n  key_file: metrics.pem\n"
                    "  client_ca_file: scrapers.pem\n"
                    "  client_auth_type: RequireAndVerifyClientCert\n")
    server = serving(path)
    prometheus = scrapers.issue_cert("prometheus")
    assert _https_status(server.port, ca, prometheus) == 200
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _https_status(server.port, ca)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        _https_status(server.port, ca, trustme.CA().issue_cert("stranger"))
    renewed = trustme.CA()
    renewed.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "metrics.pem"))
    assert server.reload()
    assert _https_status(server.port, renewed, prometheus) == 200
