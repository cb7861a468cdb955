"""A broker that reaches etcd over TLS with a client certificate (``etcd_ca_file``,
``etcd_cert_file``, ``etcd_key_file``): a real etcd serving https only with
``--client-cert-auth``, certificates from ``trustme`` (IP SAN 127.0.0.1). The broker joins
and serves a produce and a fetch; a broker with the wrong CA, or without a client
certificate, does not start and says in one line that etcd is the problem."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import trustme

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.etcd_process import EtcdProcess
from tests.helpers.wire import Wire, batch, split_values

pytestmark = pytest.mark.timeout(90)
DOC = Path(__file__).parents[2] / "docs" / "security.md"


@pytest.fixture(scope="module")
def tls_etcd(tmp_path_factory):
    directory = tmp_path_factory.mktemp("etcd-tls")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1")
    client = ca.issue_cert("tslog-broker")
    files = {}
    for name, blob in (("ca.pem", ca.cert_pem), ("etcd.pem", server.cert_chain_pems[0]),
                       ("etcd.key", server.private_key_pem),
                       ("broker.pem", client.cert_chain_pems[0]),
                       ("broker.key", client.private_key_pem),
                       ("other-ca.pem", trustme.CA().cert_pem)):
        blob.write_to_path(str(directory / name))
        files[name] = str(directory / name)
    etcd = EtcdProcess(directory / "etcd",
                       tls=(files["etcd.pem"], files["etcd.key"], files["ca.pem"])).start()
    etcd.files = files
    yield etcd
    etcd.stop()


def _broker(tmp_path, etcd, **settings) -> BrokerProcess:
    return BrokerProcess(tmp_path / "broker", config={
        "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 2000,
        "request_timeout_ms": 1000, **settings})


def test_a_broker_joins_etcd_over_tls_and_serves(tmp_path, tls_etcd):
    """With the TOML example of docs/security.md ("etcd"), its paths and endpoints made
    this test's."""
    text = DOC.read_text()
    section = text[text.index("\n## etcd\n"):]
    (example,) = re.findall(r"```toml\n(.*?)```", section, re.S)
    etc = tmp_path / "etc"
    etc.mkdir()
    for documented, made in (("etcd-ca.pem", "ca.pem"), ("etcd-client.pem", "broker.pem"),
                             ("etcd-client.key", "broker.key")):
        shutil.copy(tls_etcd.files[made], etc / documented)
    # Two endpoints (the one member twice): the several-endpoint gRPC target, whose
    # certificate check needs the explicit server name etcd_tls.py gives it.
    endpoints = f"{tls_etcd.endpoint},{tls_etcd.endpoint}"
    example = re.sub(r'etcd_endpoints = "[^"]*"', f'etcd_endpoints = "{endpoints}"',
                     example).replace("/etc/tslog/", f"{etc}/")
    (etc / "broker.toml").write_text(example)
    broker = BrokerProcess(tmp_path / "broker", args=["--config", str(etc / "broker.toml")],
                           config={"broker_session_timeout_ms": 2000})
    broker.start()
    try:
        with Wire(broker.host, broker.port) as wire:
            assert wire.create_topic("over-tls") == 0
            assert wire.produce("over-tls", 0, batch([b"a", b"b"]))["error_code"] == 0
            fetched = wire.fetch("over-tls", 0, 0)
        assert fetched["error_code"] == 0
        assert [value for _, value in split_values(fetched["records"])] == [b"a", b"b"]
        assert "joined cluster" in broker.log_text()
    finally:
        broker.terminate()


@pytest.mark.parametrize("settings", [
    {"etcd_ca_file": "other-ca.pem", "etcd_cert_file": "broker.pem",
     "etcd_key_file": "broker.key"},
    {"etcd_ca_file": "ca.pem"},  # no client certificate: etcd's --client-cert-auth refuses
    {},  # plaintext gRPC to an https-only etcd
], ids=["wrong-ca", "no-client-cert", "plaintext"])
def test_a_broker_that_cannot_reach_etcd_securely_does_not_start(tmp_path, tls_etcd, settings):
    broker = _broker(tmp_path, tls_etcd,
                     **{key: tls_etcd.files[name] for key, name in settings.items()})
    broker.launch()
    assert broker.exit_code() == 1
    (line,) = [line for line in broker.log_text().splitlines()
               if "could not join the cluster" in line]
    assert "etcd at" in line
    assert "Traceback" not in broker.log_text()


def test_an_unreadable_etcd_file_is_named(tmp_path, tls_etcd):
    broker = _broker(tmp_path, tls_etcd, etcd_ca_file=str(tmp_path / "missing.pem"))
    broker.launch()
    assert broker.exit_code() == 1
    assert f"cannot read etcd_ca_file {tmp_path / 'missing.pem'}" in broker.log_text()
