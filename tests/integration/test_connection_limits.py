"""Connection limits and protected mode, against real broker processes.

Goal (issue 16): one client holding idle connections from one address cannot lock the others
out silently; whoever is refused hears why (TOO_MANY_CONNECTIONS, naming the limit) from the
raw wire, ``Consumer.poll``, a send's future, ``Admin``, ``BrokerSocket`` and the CLI, instead
of retrying in silence; and a broker reachable from other hosts with no authentication does
not start unless the operator says ``allow_anonymous``. Method: one broker for the module
with ``max_connections_per_address = 4``, filled with idle raw connections from 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

import bcrypt
import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.tls import make_tls_files
from tests.helpers.wire import Wire
from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.blocking import BrokerSocket
from tslog.client.errors import TooManyConnectionsError
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

PER_ADDRESS = 4
REFUSED = "max_connections_per_address = 4"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("limits") / "broker",
                            config={"max_connections_per_address": PER_ADDRESS})
    process.start()
    with Wire(process.host, process.port) as wire:
        assert wire.create_topic("t") == 0
    yield process
    process.cleanup()


@contextlib.contextmanager
def address_full(broker):
    """Idle connections from 127.0.0.1 until the broker refuses the next (the readiness
    probe's may still be closing: counting them would race)."""
    held: list[Wire] = []
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            wire = Wire(broker.host, broker.port)
            body = wire.api_versions()
            if body["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS:
                wire.close()
                break
            held.append(wire)
        assert len(held) <= PER_ADDRESS
        yield held
    finally:
        for wire in held:
            wire.close()


def test_a_refused_raw_client_gets_the_typed_error_naming_the_limit_then_a_close(broker):
    with address_full(broker), Wire(broker.host, broker.port) as wire:
        body = wire.request(ApiKey.METADATA, {"topics": None})
        assert body["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS
        assert "too many connections from 127.0.0.1" in body["error_message"]
        assert REFUSED in body["error_message"]
        assert wire.is_closed_by_peer()
    with Wire(broker.host, broker.port) as wire:  # the idle ones closed: room again
        assert wire.api_versions()["error_code"] == 0
    assert "connection refused: too many connections from 127.0.0.1" in broker.log_text()


def test_consumer_poll_raises_the_reason_instead_of_polling_in_silence(broker):
    consumer = Consumer(broker.bootstrap)  # connected (metadata) before the address fills
    try:
        consumer.assign([TopicPartition("t", 0)])
        with address_full(broker):  # its fetch connection is refused
            started = time.monotonic()
            with pytest.raises(TooManyConnectionsError, match=REFUSED):
                consumer.poll(timeout_ms=10_000)
            assert time.monotonic() - started < 5
        assert consumer.poll(timeout_ms=100) == []  # room again: polling goes on
        with address_full(broker), pytest.raises(TooManyConnectionsError, match=REFUSED):
            Consumer(broker.bootstrap)  # a new one: its first metadata request is refused
    finally:
        consumer.close()


def test_producer_send_fails_with_the_reason(broker):
    # Bootstrapped by name, the producer opens a second connection to the address the broker
    # advertises (127.0.0.1) for its first Produce: after the address filled up.
    producer = Producer(f"localhost:{broker.port}", linger_ms=0)
    try:
        producer.partitions_for("t")
        with address_full(broker):
            started = time.monotonic()
            with pytest.raises(TooManyConnectionsError, match=REFUSED):
                producer.send("t", b"x").result(timeout=30)
            assert time.monotonic() - started < 5
            with pytest.raises(TooManyConnectionsError, match=REFUSED):
                Producer(broker.bootstrap)  # a new one: its first metadata request is refused
        assert producer.send("t", b"y").result(timeout=30).offset >= 0  # room again
    finally:
        producer.close()


def test_admin_blocking_socket_and_cli_say_why(broker):
    with address_full(broker):
        with pytest.raises(TooManyConnectionsError, match=REFUSED):
            Admin(broker.bootstrap)  # its first metadata request is refused
        socket = BrokerSocket(broker.host, broker.port, timeout_s=10)
        with pytest.raises(TooManyConnectionsError, match=REFUSED):
            socket.request(ApiKey.API_VERSIONS, {})
        result = subprocess.run(
            [sys.executable, "-m", "tslog.client.cli", "topics", "list",
             "--bootstrap", broker.bootstrap], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("tslog: error: ") and REFUSED in line


def test_protected_mode_refuses_a_non_loopback_listen_without_authentication(tmp_path):
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "tslog.broker", "--data-dir", str(tmp_path / "data"),
         "--listen", f"0.0.0.0:{port}"], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "protected mode" in line and "allow_anonymous = true" in line
    assert "--allow-anonymous" in line and "TSLOG_ALLOW_ANONYMOUS=true" in line
    assert not (tmp_path / "data").exists()  # refused before touching anything


def test_allow_anonymous_starts_it_on_every_address(tmp_path):
    port = free_port()
    process = BrokerProcess(tmp_path / "data", port=port,
                            args=["--listen", f"0.0.0.0:{port}", "--allow-anonymous"])
    try:
        process.start()  # probes 127.0.0.1, one of every address
    finally:
        process.cleanup()


def start_exit(tmp_path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tslog.broker", "--data-dir", str(tmp_path / "data"),
         "--listen", f"127.0.0.1:{free_port()}", *args], capture_output=True, text=True,
        timeout=60, env={"PATH": "/usr/bin:/bin", **(env or {})})


SASL_ON = {"TSLOG_SASL_MECHANISMS": "SCRAM-SHA-512"}  # the client port is not the question


def test_protected_mode_refuses_open_metrics_on_other_hosts(tmp_path):
    result = start_exit(tmp_path, "--metrics-listen", f"0.0.0.0:{free_port()}", env=SASL_ON)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "protected mode: metrics_listen = 0.0.0.0:" in line
    assert "no metrics_web_config_file" in line and "allow_anonymous = true" in line
    assert not (tmp_path / "data").exists()  # refused before touching anything


def test_protected_mode_refuses_metrics_with_tls_but_no_authentication(tmp_path):
    certs = make_tls_files(tmp_path / "certs")
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {certs.broker_cert}\n"
                   f"  key_file: {certs.broker_key}\n")
    result = start_exit(tmp_path, "--metrics-listen", f"0.0.0.0:{free_port()}",
                        "--metrics-web-config", str(web), env=SASL_ON)
    assert result.returncode == 2
    line = result.stderr.strip().splitlines()[-1]  # after the effective-config line
    assert line.startswith("tslog-broker: invalid broker configuration: protected mode: "
                           "metrics_listen")
    assert "asks for neither basic_auth_users nor a client certificate" in line


def test_metrics_with_basic_auth_or_allow_anonymous_may_listen_everywhere(tmp_path):
    web = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(b"scrape-pw", bcrypt.gensalt(4)).decode()
    web.write_text(f"basic_auth_users:\n  prometheus: '{hashed}'\n")
    for extra in (["--metrics-web-config", str(web)], ["--allow-anonymous"]):
        port = free_port()
        process = BrokerProcess(tmp_path / f"data-{len(extra)}", port=port, args=[
            "--metrics-listen", f"0.0.0.0:{free_port()}", *extra])
        try:
            process.start()
        finally:
            process.cleanup()
