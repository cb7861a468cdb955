"""TLS on the client listener, as a user meets it: what is refused and how it is said, who the
broker takes a client certificate for, and Producer/Consumer/Admin working over it.

Method: one real broker for the module with mutual TLS required (certificates made by
``trustme`` in ``tests/helpers/tls.py``), and the public client API. A refusal must come as a
typed error naming the broker, quickly, and leave the broker serving everyone else.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time

import pytest

from tslog.client import Admin, Consumer, ConnectionLostError, Producer, Security, TlsError
from tslog.client.aio import AsyncAdmin
from tslog.client.blocking import BrokerSocket
from tslog.protocol.messages import ApiKey

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.tls import make_tls_files


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, certs):
    """Mutual TLS required; the readiness probe presents alice's certificate."""
    process = BrokerProcess(tmp_path_factory.mktemp("tls") / "broker",
                            config=certs.broker_config("required"),
                            ssl_context=certs.client_context(certs.alice))
    process.start()
    yield process
    process.cleanup()


def still_serving(broker, certs) -> None:
    with Admin(broker.bootstrap, security=certs.security(certs.alice)) as admin:
        admin.list_topics()


def test_producer_consumer_admin_round_trip_over_mutual_tls(tls_broker, certs):
    security = certs.security(certs.alice)
    with Admin(tls_broker.bootstrap, security=security) as admin:
        admin.create_topic("tls-round-trip", partitions=2)
        assert "tls-round-trip" in admin.list_topics()
    with Producer(tls_broker.bootstrap, security=security, linger_ms=1) as producer:
        futures = [producer.send("tls-round-trip", b"v%d" % i, key=b"k%d" % i)
                   for i in range(500)]
        producer.flush()
        assert all(f.get(10).offset >= 0 for f in futures)
    with Consumer(tls_broker.bootstrap, security=security,
                  auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["tls-round-trip"])
        records, deadline = [], time.monotonic() + 20
        while len(records) < 500 and time.monotonic() < deadline:
            records += consumer.poll(200)
    assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(500))


def test_the_async_admin_and_a_blocking_socket_speak_tls_too(tls_broker, certs):
    security = certs.security(certs.bob)

    async def topics():
        async with AsyncAdmin(tls_broker.bootstrap, security=security) as admin:
            return await admin.list_topics()

    assert isinstance(asyncio.run(topics()), list)
    connection = BrokerSocket(tls_broker.host, tls_broker.port, 10.0, security=security)
    try:
        assert connection.request(ApiKey.API_VERSIONS, {})["error_code"] == 0
    finally:
        connection.close()


def test_a_client_certificate_is_the_connection_principal(tls_broker, certs):
    for client in (certs.alice, certs.bob):
        Admin(tls_broker.bootstrap, security=certs.security(client)).close()
        line = f"authenticated as {client.principal}"
        deadline = time.monotonic() + 10
        while line not in tls_broker.log_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert line in tls_broker.log_text()
    assert certs.alice.principal == "User:CN=alice,OU=eng,O=acme"  # Kafka's form


def test_a_plaintext_client_is_refused_with_a_hint(tls_broker, certs):
    started = time.monotonic()
    with pytest.raises(ConnectionLostError, match="before answering.*TLS") as caught:
        Admin(tls_broker.bootstrap, retries=1)
    assert not isinstance(caught.value, TlsError)
    assert tls_broker.bootstrap in str(caught.value)
    assert time.monotonic() - started < 10
    still_serving(tls_broker, certs)


def test_an_untrusted_broker_certificate_is_refused_at_once(tls_broker, certs):
    started = time.monotonic()
    with pytest.raises(TlsError, match="not trusted") as caught:
        Admin(tls_broker.bootstrap, security=certs.security(certs.alice, ca=certs.other_ca))
    assert tls_broker.bootstrap in str(caught.value) and not caught.value.retriable
    assert time.monotonic() - started < 5
    with pytest.raises(TlsError, match="not trusted"):
        BrokerSocket(tls_broker.host, tls_broker.port, 10.0,
                     security=certs.security(ca=certs.other_ca))
    still_serving(tls_broker, certs)


def test_mutual_tls_without_a_client_certificate_is_refused(tls_broker, certs):
    started = time.monotonic()
    with pytest.raises(TlsError, match="certificate") as caught:
        Admin(tls_broker.bootstrap, security=certs.security())
    assert tls_broker.bootstrap in str(caught.value)
    assert time.monotonic() - started < 5
    connection = BrokerSocket(tls_broker.host, tls_broker.port, 10.0,
                              security=certs.security())
    with pytest.raises((TlsError, ConnectionError)):
        connection.request(ApiKey.API_VERSIONS, {})
    connection.close()
    still_serving(tls_broker, certs)


def test_a_tls_client_to_a_plaintext_broker_is_refused(broker):
    with pytest.raises(TlsError, match=broker.bootstrap):
        Admin(broker.bootstrap, security=Security(protocol="SSL", ssl_check_hostname=False))


@pytest.mark.parametrize("change, message", [
    ({"tls_key_file": "missing.pem"}, "tls_key_file .*missing.pem: no such file"),
    ({"tls_key_file": "OTHER_KEY"}, "tls_cert_file .* tls_key_file .*cannot be used together"),
    ({"tls_ca_file": "BROKER_KEY"}, "tls_ca_file .*not a PEM CA bundle"),
])
def test_a_bad_tls_file_stops_the_broker_with_one_line(tmp_path, certs, change, message):
    config = certs.broker_config("required")
    for key, value in change.items():
        config[key] = {"OTHER_KEY": certs.other_broker_key,
                       "BROKER_KEY": certs.broker_key}.get(value, str(tmp_path / value))
    process = BrokerProcess(tmp_path / "bad", config=config).launch()
    assert process.exit_code() == 1
    errors = [line for line in process.log_text().splitlines() if "could not start" in line]
    assert len(errors) == 1 and re.search(message, errors[0]), \
        process.log_text()[-2000:]
    assert "PRIVATE KEY" not in process.log_text()


def tslog(*args, stdin: bytes | None = None, env: dict | None = None):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "tslog.client.cli", *args], input=stdin,
                          capture_output=True, timeout=60, env=environment)


def test_the_cli_connects_with_a_command_config_file(tls_broker, certs, tmp_path):
    config = tmp_path / "client.properties"
    config.write_text("# Kafka's --command-config format\n"
                      "security.protocol=SSL\n"
                      f"ssl.ca.location={certs.ca}\n"
                      f"ssl.certificate.location={certs.bob.cert}\n"
                      f"ssl.key.location={certs.bob.key}\n")
    where = ["--bootstrap", tls_broker.bootstrap]
    created = tslog("topics", "create", "cli-tls", "--command-config", str(config), *where)
    assert created.returncode == 0, created.stderr.decode()
    produced = tslog("--command-config", str(config), "produce", "cli-tls", *where,
                     stdin=b"one\ntwo\nthree\n")
    assert produced.returncode == 0, produced.stderr.decode()
    consumed = tslog("consume", "cli-tls", "--max-messages", "3", "--format", "value", *where,
                     env={"TSLOG_COMMAND_CONFIG": str(config)})
    assert consumed.stdout.decode().split() == ["one", "two", "three"], consumed.stderr
    refused = tslog("topics", "list", *where)  # no config: plain TCP to a TLS listener
    assert refused.returncode == 1
    assert refused.stderr.decode().startswith(f"tslog: error: {tls_broker.bootstrap} closed")
    assert "Traceback" not in refused.stderr.decode()


def test_one_tls_context_per_client_whatever_its_connections(tls_broker, certs, monkeypatch):
    built = []
    original = Security.ssl_context
    monkeypatch.setattr(Security, "ssl_context",
                        lambda self: built.append(self) or original(self))
    security = certs.security(certs.alice)
    with Admin(tls_broker.bootstrap, security=security) as admin:
        admin.create_topic("tls-one-context", partitions=3, exist_ok=True)
    with Producer(tls_broker.bootstrap, security=security, linger_ms=0) as producer:
        for partition in range(3):  # connections: bootstrap, leader, producer id ...
            producer.send("tls-one-context", b"x", partition=partition).get(10)
    assert len(built) == 2  # the admin's and the producer's
