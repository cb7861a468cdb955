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

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
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
