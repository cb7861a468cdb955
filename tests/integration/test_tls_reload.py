"""Certificate rotation on SIGHUP: the broker loads the new files into its live TLS context,
keeps its listener and every open connection, and new connections get the new certificate.
A bad file on reload is logged and the old certificate stays in service."""

from __future__ import annotations

import shutil
import signal
import socket
import time

import pytest

from tslog.client import Admin, Producer

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.tls import make_tls_files


def served_certificate(broker, context) -> dict:
    with socket.create_connection((broker.host, broker.port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname=broker.host) as sock:
        return sock.getpeercert()


def wait_for_line(broker, line: str, count: int = 1) -> None:
    deadline = time.monotonic() + 10
    while broker.log_text().count(line) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert broker.log_text().count(line) >= count, broker.log_text()[-2000:]


@pytest.fixture
def tls_broker(tmp_path):
    certs = make_tls_files(tmp_path / "certs")
    # The broker reads copies, which the test replaces as an operator would.
    live = {name: str(tmp_path / f"live-{name}.pem") for name in ("cert", "key")}
    shutil.copy(certs.broker_cert, live["cert"])
    shutil.copy(certs.broker_key, live["key"])
    config = {**certs.broker_config("required"), "tls_cert_file": live["cert"],
              "tls_key_file": live["key"]}
    process = BrokerProcess(tmp_path / "broker", config=config,
                            ssl_context=certs.client_context(certs.alice))
    process.start()
    yield process, certs, live
    process.cleanup()


def test_sighup_rotates_the_certificate_while_clients_stay_connected(tls_broker):
    broker, certs, live = tls_broker
    security, context = certs.security(certs.alice), certs.client_context(certs.alice)
    before = served_certificate(broker, context)
    with Admin(broker.bootstrap, security=security) as admin:
        admin.create_topic("rotated", partitions=1)
    with Producer(broker.bootstrap, security=security, linger_ms=0) as producer:
        producer.send("rotated", b"before").get(10)
        new_cert, new_key = certs.issue_broker_cert("rotated-broker", "broker-2")
        shutil.copy(new_cert, live["cert"])
        shutil.copy(new_key, live["key"])
        broker.process.send_signal(signal.SIGHUP)
        wait_for_line(broker, "reloaded TLS certificate")
        assert "subject CN=broker-2" in broker.log_text()
        assert producer.send("rotated", b"after").get(10).offset == 1  # same connection
        after = served_certificate(broker, context)
    assert after["serialNumber"] != before["serialNumber"]
    assert ("commonName", "broker-2") in [rdn[0] for rdn in after["subject"]]

    # A broken key on the next reload: logged, and the rotated certificate stays in service.
    shutil.copy(certs.other_broker_key, live["key"])
    broker.process.send_signal(signal.SIGHUP)
    wait_for_line(broker, "TLS reload failed, still serving the previous certificate")
    assert served_certificate(broker, context)["serialNumber"] == after["serialNumber"]
    assert broker.running and "PRIVATE KEY" not in broker.log_text()


def test_sighup_to_a_plain_broker_is_logged_and_ignored(broker):
    broker.process.send_signal(signal.SIGHUP)
    wait_for_line(broker, "SIGHUP: no TLS configured, nothing to reload")
    with Admin(broker.bootstrap) as admin:
        admin.list_topics()
    assert broker.running
