"""Bad input against a real broker process, over raw sockets.

Each test sends one kind of bad input and asserts three things a user would notice: the
documented answer (an error code, or the connection closed), that the broker still serves a
well-behaved request on a new connection, and that nothing was written (the log end offset is
unchanged). The broker must log exactly one line for the bad input, and never a traceback.
"""

from __future__ import annotations

import socket
import struct
import time

import msgpack
import pytest

from tests.helpers.wire import Wire, batch, raw_frame
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(60)

TOPIC = "events"


@pytest.fixture
def ready(broker):
    """A broker with one topic holding one record; yields (broker, log line count)."""
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic(TOPIC) == 0
        assert wire.produce(TOPIC, 0, batch([b"first"]))["error_code"] == 0
    time.sleep(0.1)
    return broker


def log_lines(broker) -> list[str]:
    return broker.log_text().splitlines()


def assert_one_new_line(broker, before: int) -> str:
    """Exactly one log line appeared since ``before`` lines (and no traceback at all)."""
    deadline = time.monotonic() + 3
    while len(log_lines(broker)) <= before and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.1)  # a second line, if any, would show by now
    new = log_lines(broker)[before:]
    assert len(new) == 1, new
    assert "Traceback" not in broker.log_text()
    return new[0]


def assert_still_serving_and_unchanged(broker) -> None:
    with Wire(broker.host, broker.port) as wire:
        assert wire.api_versions()["error_code"] == 0
        assert wire.log_end_offset(TOPIC) == 1
        records = wire.fetch(TOPIC, 0, 0)["records"]
        assert len(records) > 0


def raw_request(api_key, version, correlation_id, body) -> bytes:
    return raw_frame(msgpack.packb([api_key, version, correlation_id, "bad", body]))


def send_and_expect_close(broker, data: bytes) -> None:
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(data)
        assert wire.is_closed_by_peer()


def test_garbage_bytes_close_the_connection(ready):
    before = len(log_lines(ready))
    send_and_expect_close(ready, raw_frame(b"\xc1\xc1 this is not msgpack"))
    assert "not msgpack" in assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


@pytest.mark.parametrize("message", [
    {"not": "an array"},
    [0, 0, 1, "x"],                          # four items
    [0, 0, "one", "x", {}],                  # correlation id not an int
    [0, 0, -5, "x", {}],                     # negative correlation id
    [0, 0, 1, "x", []],                      # body not a map
])
def test_bad_envelope_closes_the_connection(ready, message):
    before = len(log_lines(ready))
    send_and_expect_close(ready, raw_frame(msgpack.packb(message)))
    assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_frame_over_the_maximum_closes_before_the_body_is_read(ready):
    before = len(log_lines(ready))
    with Wire(ready.host, ready.port) as wire:
        wire.send_raw(struct.pack(">I", 16 * 1024 * 1024 + 1) + b"\x00" * 1000)
        assert wire.is_closed_by_peer()
    assert "exceeds" in assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_frame_cut_off_by_disconnect_writes_nothing(ready):
    before = len(log_lines(ready))
    body = {"acks": -1, "timeout_ms": 1000, "topics": [
        {"topic": TOPIC, "partitions": [{"partition": 0, "records": batch([b"half"])}]}]}
    frame = raw_request(ApiKey.PRODUCE, 0, 1, body)
    sock = socket.create_connection((ready.host, ready.port))
    sock.sendall(frame[: len(frame) // 2])
    sock.close()
    assert "inside a frame" in assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_unknown_api_key_is_answered_and_the_connection_kept(ready):
    before = len(log_lines(ready))
    with Wire(ready.host, ready.port) as wire:
        wire.send_raw(raw_request(77, 0, 42, {}))
        correlation_id, body = wire.receive(ApiKey.API_VERSIONS)  # any api: error body
        assert correlation_id == 42 and body["error_code"] == ErrorCode.UNKNOWN_API_KEY
        assert wire.api_versions()["error_code"] == 0  # same connection still works
    assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_unsupported_version_is_answered_and_the_connection_kept(ready):
    before = len(log_lines(ready))
    with Wire(ready.host, ready.port) as wire:
        wire.send_raw(raw_request(ApiKey.METADATA, 9, 43, {"topics": None}))
        correlation_id, body = wire.receive(ApiKey.METADATA)
        assert correlation_id == 43 and body["error_code"] == ErrorCode.UNSUPPORTED_VERSION
        assert wire.api_versions()["error_code"] == 0
    assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def _produce_body(partition_entry: dict, acks=-1) -> dict:
    return {"acks": acks, "timeout_ms": 1000,
            "topics": [{"topic": TOPIC, "partitions": [partition_entry]}]}


@pytest.mark.parametrize("body", [
    _produce_body({"partition": 0, "records": batch([b"x"])}, acks="all"),    # wrong type
    _produce_body({"partition": "0", "records": batch([b"x"])}),              # wrong type
    _produce_body({"partition": 0, "records": "not bin"}),                    # str, not bin
    _produce_body({"partition": -1, "records": batch([b"x"])}),               # negative
    _produce_body({"records": batch([b"x"])}),                                # missing
    _produce_body({"partition": 0, "records": batch([b"x"]), "extra": 1}),    # unknown key
    {"acks": -1, "topics": []},                                               # missing key
], ids=["acks-str", "partition-str", "records-str", "negative-partition", "missing-partition",
        "unknown-key", "missing-timeout"])
def test_schema_violations_get_invalid_request(ready, body):
    before = len(log_lines(ready))
    with Wire(ready.host, ready.port) as wire:
        wire.send_raw(raw_request(ApiKey.PRODUCE, 0, 44, body))
        correlation_id, response = wire.receive(ApiKey.PRODUCE)
        assert correlation_id == 44
        assert response["error_code"] == ErrorCode.INVALID_REQUEST
        assert "Traceback" not in response["error_message"]
        assert wire.api_versions()["error_code"] == 0
    assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def _produce_code(broker, topic: str, records: bytes) -> int:
    with Wire(broker.host, broker.port) as wire:
        return wire.produce(topic, 0, records)["error_code"]


def test_unknown_topic_gets_unknown_topic_or_partition(ready):
    before = len(log_lines(ready))
    assert _produce_code(ready, "nope", batch([b"x"])) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_bad_crc_batch_gets_corrupt_message(ready):
    data = bytearray(batch([b"x"]) + batch([b"tampered"]))
    data[-1] ^= 0x01
    before = len(log_lines(ready))
    assert _produce_code(ready, TOPIC, bytes(data)) == ErrorCode.CORRUPT_MESSAGE
    assert "CORRUPT_MESSAGE" in assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_create_time_out_of_bounds_gets_invalid_timestamp(ready):
    future = int(time.time() * 1000) + 10 * 3600 * 1000  # after.max.ms is one hour
    before = len(log_lines(ready))
    records = batch([b"ok"]) + batch([b"from the future"], create_time=future)
    assert _produce_code(ready, TOPIC, records) == ErrorCode.INVALID_TIMESTAMP
    assert "INVALID_TIMESTAMP" in assert_one_new_line(ready, before)
    assert_still_serving_and_unchanged(ready)


def test_client_that_sends_nothing_is_closed_after_the_idle_timeout(broker_factory):
    broker = broker_factory(env={"TSLOG_CONNECTIONS_MAX_IDLE_MS": "500"})
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic(TOPIC) == 0
        assert wire.produce(TOPIC, 0, batch([b"first"]))["error_code"] == 0
    time.sleep(0.1)
    before = len(log_lines(broker))
    started = time.monotonic()
    with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
        assert sock.recv(10) == b""
    assert 0.4 <= time.monotonic() - started < 5
    assert "idle" in assert_one_new_line(broker, before)
    assert_still_serving_and_unchanged(broker)


def test_connections_over_the_limit_are_closed_and_others_served(broker_factory):
    broker = broker_factory(env={"TSLOG_MAX_CONNECTIONS": "2"})
    time.sleep(0.3)  # let the broker see the readiness probe's connection close
    with Wire(broker.host, broker.port) as first, Wire(broker.host, broker.port) as second:
        assert first.api_versions()["error_code"] == 0
        assert second.api_versions()["error_code"] == 0
        with Wire(broker.host, broker.port) as third:  # told why, then closed
            refusal = third.api_versions()
            assert refusal["error_code"] == ErrorCode.TOO_MANY_CONNECTIONS
            assert "max_connections = 2" in refusal["error_message"]
            assert third.is_closed_by_peer()
        assert first.api_versions()["error_code"] == 0  # the admitted ones carry on
    time.sleep(0.2)
    with Wire(broker.host, broker.port) as again:  # slots free again
        assert again.api_versions()["error_code"] == 0
