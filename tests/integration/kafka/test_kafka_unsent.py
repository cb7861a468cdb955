"""The Kafka listener's connections obey the same limits as the native ones, because they are
the same connection (issue 41: one shell, ``broker/server/connection.py``, with Kafka's codec):
answers held unsent behind a long poll count against ``max_unsent_response_bytes``, a client
that never reads cannot grow the broker's memory past its share, idle Kafka connections close
after ``connections_max_idle_ms`` and are counted as idle closes, and a refused version is
counted like a native refusal.

Method as in ``tests/integration/test_unread_responses.py``: a real broker process holding
4 MiB in one partition, raw sockets speaking Kafka's protocol (the project's Kafka codec, whose
bytes kafka-python and librdkafka accept in the other Kafka tests), and the broker's peak
resident memory from /proc/<pid>/status. Before the one shell, the Kafka listener held every
answer settled behind a long poll, up to ``max_in_flight_requests`` (128) of them: 120 MiB for
this test's 120 1-MiB Fetches.
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
import urllib.request

import pytest

from tests.helpers.broker_process import free_port
from tests.helpers.wire import Wire, batch
from tests.integration.test_unread_responses import (ALLOCATOR_RETURNS_FREED_BLOCKS, MIB,
                                                     baseline_rss, memory)
from tslog.protocol.kafka import decode_response, encode_request

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/<pid>/status"),
              pytest.mark.timeout(180)]

TOPIC, EMPTY_TOPIC = "big", "quiet"
FETCH_BYTES = 1 << 20
HELD_BOUND = 40 * MIB  # one connection: the 8 MiB cap, one response and the allocator's slack
FETCH, API_VERSIONS = 1, 18


def fetch(correlation_id: int, topic: str, *, max_wait_ms: int = 0, min_bytes: int = 0) -> bytes:
    body = {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": FETCH_BYTES, "isolation_level": 0, "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0,
                                                 "partition_max_bytes": FETCH_BYTES}]}]}
    data = encode_request(FETCH, 4, correlation_id, "hostile", body)
    return struct.pack(">I", len(data)) + data


def receive(sock) -> bytes | None:
    head = read(sock, 4)
    return None if head is None else read(sock, struct.unpack(">I", head)[0])


def read(sock, count: int) -> bytes | None:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(min(count - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


@pytest.fixture
def kafka_filled(broker_factory):
    """A broker with a Kafka listener and a metrics endpoint whose ``big`` partition holds
    4 MiB; returns (broker, Kafka port, metrics port)."""

    def make(**config):
        kafka_port, metrics_port = free_port(), free_port()
        env = {**ALLOCATOR_RETURNS_FREED_BLOCKS,
               **{f"TSLOG_{k.upper()}": str(v) for k, v in config.items()}}
        broker = broker_factory(env=env, args=[
            "--kafka-listen", f"127.0.0.1:{kafka_port}",
            "--metrics-listen", f"127.0.0.1:{metrics_port}"])
        with Wire(broker.host, broker.port) as wire:
            assert wire.create_topic(TOPIC) == 0 and wire.create_topic(EMPTY_TOPIC) == 0
            for _ in range(16):
                records = batch([b"v" * 1000] * 256)
                assert wire.produce(TOPIC, 0, records)["error_code"] == 0
        return broker, kafka_port, metrics_port

    return make


def scrape(port: int, name: str) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name)]
    return sum(values)


def test_answers_held_behind_a_kafka_long_poll_count_against_the_connection_cap(kafka_filled):
    """A Kafka Fetch that long-polls an empty partition (3 s), then 120 pipelined 1-MiB
    Fetches: their answers wait behind it and count against max_unsent_response_bytes, so the
    broker grows by under HELD_BOUND (not 120 MiB); then every answer arrives, in order."""
    broker, kafka_port, _ = kafka_filled()
    pid = broker.process.pid
    baseline = baseline_rss(pid)
    count = 120
    frames = fetch(1, EMPTY_TOPIC, max_wait_ms=3000, min_bytes=1)
    frames += b"".join(fetch(i + 2, TOPIC) for i in range(count))
    sock = socket.create_connection(("127.0.0.1", kafka_port))
    sender = threading.Thread(target=sock.sendall, args=(frames,), daemon=True)
    try:
        sender.start()
        time.sleep(2.0)  # inside the long poll: the answers behind it are held, or not read
        held = memory(pid, "VmHWM") - baseline
        assert held < HELD_BOUND, f"broker grew by {held / MIB:.0f} MiB"
        sock.settimeout(60)
        for expected in range(1, count + 2):
            correlation_id, body = decode_response(FETCH, 4, receive(sock))
            partition = body["responses"][0]["partitions"][0]
            assert correlation_id == expected and partition["error_code"] == 0
            assert bool(partition["records"]) == (expected > 1)
    finally:
        sock.close()
    assert broker.running and "Traceback" not in broker.log_text()


def test_an_idle_kafka_connection_is_closed_and_counted(kafka_filled):
    """connections_max_idle_ms applies to Kafka clients as to native ones, and the close is
    counted in tslog_refused_requests_total{reason="idle_timeout"}."""
    broker, kafka_port, metrics_port = kafka_filled(connections_max_idle_ms=1000)
    before = scrape(metrics_port, 'tslog_refused_requests_total{reason="idle_timeout"}')
    with socket.create_connection(("127.0.0.1", kafka_port)) as sock:
        sock.settimeout(10)
        data = encode_request(API_VERSIONS, 0, 7, "idle", {})
        sock.sendall(struct.pack(">I", len(data)) + data)
        assert decode_response(API_VERSIONS, 0, receive(sock))[0] == 7
        assert receive(sock) is None  # closed by the broker after a second of silence
    after = scrape(metrics_port, 'tslog_refused_requests_total{reason="idle_timeout"}')
    assert after == before + 1


def test_an_unserved_kafka_version_is_answered_and_counted(kafka_filled):
    """A Fetch version no Kafka has gets UNSUPPORTED_VERSION in the v0 shape and the
    connection goes on; the refusal is counted as the native listener counts its own."""
    broker, kafka_port, metrics_port = kafka_filled()
    name = 'tslog_refused_requests_total{reason="unsupported_version"}'
    before = scrape(metrics_port, name)
    with socket.create_connection(("127.0.0.1", kafka_port)) as sock:
        sock.settimeout(10)
        header = struct.pack(">hhih", FETCH, 99, 5, 0)  # api key, version, id, empty client id
        sock.sendall(struct.pack(">I", len(header) + 1) + header + b"\x00")
        assert struct.unpack(">ih", receive(sock)) == (5, 35)  # UNSUPPORTED_VERSION
        sock.sendall(fetch(6, TOPIC))
        assert decode_response(FETCH, 4, receive(sock))[0] == 6
    assert scrape(metrics_port, name) == before + 1
