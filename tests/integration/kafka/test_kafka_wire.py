"""The Kafka listener at the byte level: an API or version it does not serve is answered
UNSUPPORTED_VERSION and the connection goes on; garbage closes that connection only; the
authorizer judges Kafka requests as native ones; a Fetch long-polls."""

from __future__ import annotations

import re
import socket
import struct
import time

import pytest

from tslog.client import Producer
from tslog.protocol.kafka import decode_response, encode_request
from tslog.protocol.kafka.record_batch import iter_batches

UNSUPPORTED_VERSION = 35


def _connect(broker) -> socket.socket:
    return socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=10)


def _send(sock, data: bytes) -> None:
    sock.sendall(struct.pack(">I", len(data)) + data)


def _receive(sock) -> bytes | None:
    """One response without its size, or None when the broker closed the connection."""
    head = _read(sock, 4)
    if head is None:
        return None
    return _read(sock, struct.unpack(">I", head)[0])


def _read(sock, count: int) -> bytes | None:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _api_versions_ok(sock, correlation_id: int) -> None:
    _send(sock, encode_request(18, 3, correlation_id, "wire-test", {}))
    got, body = decode_response(18, 3, _receive(sock))
    assert (got, body["error_code"]) == (correlation_id, 0)
    keys = {entry["api_key"]: (entry["min_version"], entry["max_version"])
            for entry in body["api_keys"]}
    assert keys[0] == (3, 11) and keys[1] == (4, 12) and keys[18] == (0, 4)


def test_an_unserved_api_or_version_is_answered_unsupported_and_the_connection_goes_on(
        kafka_broker):
    with _connect(kafka_broker) as sock:
        # DescribeAcls (29): not in the codec, not served.
        _send(sock, struct.pack(">hhih", 29, 0, 11, -1))
        assert _receive(sock) == struct.pack(">ih", 11, UNSUPPORTED_VERSION)
        # Produce v0: decodable, but not advertised (no RecordBatch v2 before v3).
        _send(sock, encode_request(0, 0, 12, None, {"acks": 1, "timeout_ms": 10,
                                                    "topic_data": []}))
        assert _receive(sock) == struct.pack(">ih", 12, UNSUPPORTED_VERSION)
        # ApiVersions in a version from the future: Kafka's v0 answer, with the versions.
        _send(sock, struct.pack(">hhih", 18, 99, 13, -1))
        got, body = decode_response(18, 0, _receive(sock))
        assert (got, body["error_code"]) == (13, UNSUPPORTED_VERSION)
        assert {entry["api_key"] for entry in body["api_keys"]} >= {0, 1, 2, 3, 18}
        _api_versions_ok(sock, 14)


def test_garbage_closes_that_connection_only(kafka_broker):
    with _connect(kafka_broker) as bystander:
        _api_versions_ok(bystander, 1)
        for garbage in (b"\x00\x00\x00\x03abc",  # shorter than a request header
                        b"\xff\xff\xff\xf0" + b"x" * 64,  # a size past max_frame_bytes
                        struct.pack(">I", 12) + struct.pack(">hhi", 3, 12, 5) + b"\xff" * 4,
                        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"):
            with _connect(kafka_broker) as sock:
                sock.sendall(garbage)
                assert _receive(sock) is None, garbage
        _api_versions_ok(bystander, 2)
    assert "Traceback" not in kafka_broker.process.log_text()
    assert kafka_broker.process.running


@pytest.mark.slow  # two broker starts (about 5 s)
def test_the_authorizer_judges_kafka_requests_as_it_judges_native_ones(broker_factory):
    """ACLs on, none granted (and no allow-everyone): a Kafka Produce is denied per
    partition, a ListOffsets too, and Metadata hides the topic, as on the native port; the
    scrape counts each Kafka request and its denial under ``kafka_<api>``."""
    from tslog.client import Admin
    from tslog.protocol.kafka.record_batch import encode_batch
    from tests.helpers.broker_process import free_port
    from tests.integration.test_metrics_endpoint import scrape

    port, metrics_port = free_port(), free_port()
    broker = broker_factory(args=["--kafka-listen", f"127.0.0.1:{port}",
                                  "--metrics-listen", f"127.0.0.1:{metrics_port}"])
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("guarded")
    broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true"})
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        batch = encode_batch([b"v"], [None], [1])
        _send(sock, encode_request(0, 9, 1, "acl-test", {
            "acks": 1, "timeout_ms": 1000, "topic_data": [
                {"name": "guarded", "partition_data": [{"index": 0, "records": batch}]}]}))
        _, body = decode_response(0, 9, _receive(sock))
        assert body["responses"][0]["partition_responses"][0]["error_code"] == 29
        _send(sock, encode_request(2, 7, 2, "acl-test", {"replica_id": -1, "topics": [
            {"name": "guarded", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}))
        _, body = decode_response(2, 7, _receive(sock))
        assert body["topics"][0]["partitions"][0]["error_code"] == 29
        _send(sock, encode_request(3, 12, 3, "acl-test", {"topics": None}))
        _, body = decode_response(3, 12, _receive(sock))
        assert body["topics"] == []
    metrics = scrape(metrics_port)
    denied = 'tslog_request_errors_total{api="%s",error="topic_authorization_failed"}'
    assert metrics['tslog_requests_total{api="kafka_produce"}'] == 1
    assert metrics[denied % "kafka_produce"] == 1
    assert metrics['tslog_requests_total{api="kafka_list_offsets"}'] == 1
    assert metrics[denied % "kafka_list_offsets"] == 1
    assert metrics['tslog_requests_total{api="kafka_metadata"}'] == 1


def _fetch_body(topic: str, offset: int, *, max_wait_ms: int, min_bytes: int,
                partition_max_bytes: int = 1 << 20) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": 50 << 20, "isolation_level": 1, "topics": [
                {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                 "partition_max_bytes": partition_max_bytes}]}]}


def test_a_fetch_long_polls_until_a_produce_and_honours_partition_max_bytes(kafka_broker):
    """An empty partition's Fetch (read_committed) waits, is woken by a produce on the
    native port well before max_wait_ms, and a 1-byte partition max still gets one batch."""
    topic = kafka_broker.topic("poll")
    with _connect(kafka_broker) as sock, Producer(kafka_broker.bootstrap) as producer:
        _send(sock, encode_request(1, 12, 1, "poll-test", _fetch_body(
            topic, 0, max_wait_ms=20_000, min_bytes=1)))
        time.sleep(0.3)  # the fetch is parked at the broker by now
        started = time.monotonic()
        producer.send(topic, b"first", partition=0).get(10)
        _, body = decode_response(1, 12, _receive(sock))
        assert time.monotonic() - started < 5
        part = body["responses"][0]["partitions"][0]
        assert (part["error_code"], part["high_watermark"]) == (0, 1)
        assert [b.values for b in iter_batches(part["records"])] == [[b"first"]]
        producer.send(topic, b"second", partition=0).get(10)
        _send(sock, encode_request(1, 12, 2, "poll-test", _fetch_body(
            topic, 0, max_wait_ms=0, min_bytes=0, partition_max_bytes=1)))
        _, body = decode_response(1, 12, _receive(sock))
        records = body["responses"][0]["partitions"][0]["records"]
        assert [b.values for b in iter_batches(records)] == [[b"first"]]


def test_list_offsets_earliest_latest_and_max_timestamp(kafka_broker):
    """-2, -1 and -3 (KIP-734) on a CreateTime topic whose CreateTimes go up and down."""
    topic = kafka_broker.topic("special", message_timestamp_type="CreateTime")
    now = int(time.time() * 1000)
    with Producer(kafka_broker.bootstrap) as producer:
        for delta in (-5000, -1000, -3000):
            producer.send(topic, b"x", partition=0, timestamp_ms=now + delta).get(10)
    with _connect(kafka_broker) as sock:
        answers = []
        for cid, timestamp in enumerate((-2, -1, -3)):
            _send(sock, encode_request(2, 7, cid, "special", {"replica_id": -1, "topics": [
                {"name": topic, "partitions": [{"partition_index": 0,
                                                "timestamp": timestamp}]}]}))
            part = decode_response(2, 7, _receive(sock))[1]["topics"][0]["partitions"][0]
            answers.append((part["error_code"], part["offset"], part["timestamp"]))
    assert answers == [(0, 0, -1), (0, 3, -1), (0, 1, now - 1000)]


def test_a_fetch_and_list_offsets_behind_a_large_produce_see_its_records(kafka_broker):
    """Kafka handles a connection's requests one at a time, so a Fetch and a ListOffsets
    pipelined right behind a Produce see what it appended, also when the Produce is large
    enough to convert in a worker thread (over 128 KiB) and the loop goes on meanwhile."""
    from tslog.protocol.kafka.record_batch import encode_batch

    topic = kafka_broker.topic("behind-produce")
    large = encode_batch([b"L" * 200] * 1000, None, 1_700_000_000_000)
    frames = [
        encode_request(0, 9, 1, "behind", {"acks": 1, "timeout_ms": 10_000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": large}]}]}),
        encode_request(1, 12, 2, "behind", _fetch_body(
            topic, 0, max_wait_ms=0, min_bytes=0, partition_max_bytes=1 << 20)),
        encode_request(2, 7, 3, "behind", {"replica_id": -1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
    ]
    with _connect(kafka_broker) as sock:
        sock.sendall(b"".join(struct.pack(">I", len(f)) + f for f in frames))
        produced = decode_response(0, 9, _receive(sock))[1]
        fetched = decode_response(1, 12, _receive(sock))[1]
        latest = decode_response(2, 7, _receive(sock))[1]
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
    records = fetched["responses"][0]["partitions"][0]["records"]
    assert [len(b.values) for b in iter_batches(records)] == [1000]
    assert latest["topics"][0]["partitions"][0]["offset"] == 1000


def test_a_pipelined_burst_past_max_in_flight_is_answered_in_order(tmp_path):
    """Thirty requests in one write to a listener that holds four in flight: answers settled
    while a burst is handled go out together, the frames held back go on once they are
    written, and every answer comes in request order: ApiVersions (answered at once),
    Produce (small, converted on the loop; large, in a worker thread); then a Fetch of every
    batch produced (converted in a worker thread, all batches at once)."""
    from tslog.protocol.kafka.record_batch import encode_batch
    from .conftest import start_kafka_broker

    broker = start_kafka_broker(tmp_path, max_in_flight_requests=4)
    try:
        topic = broker.topic("burst")
        small = encode_batch([b"s%d" % i for i in range(10)], None, 1_700_000_000_000)
        large = encode_batch([b"L" * 200] * 1000, None, 1_700_000_000_000)  # > 128 KiB
        frames, expected = [], []
        for cid in range(30):
            if cid % 3 == 0:
                frames.append(encode_request(18, 3, cid, "burst", {}))
            else:
                batch = large if cid % 3 == 2 else small
                frames.append(encode_request(0, 9, cid, "burst", {
                    "acks": 1, "timeout_ms": 10_000, "topic_data": [
                        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}))
                expected.append(1000 if batch is large else 10)
            frames[-1] = struct.pack(">I", len(frames[-1])) + frames[-1]
        with _connect(broker) as sock:
            sock.sendall(b"".join(frames))
            offsets = []
            for cid in range(30):
                api, version = (18, 3) if cid % 3 == 0 else (0, 9)
                got, body = decode_response(api, version, _receive(sock))
                assert got == cid
                if api == 0:
                    part = body["responses"][0]["partition_responses"][0]
                    assert part["error_code"] == 0
                    offsets.append(part["base_offset"])
            assert offsets == [sum(expected[:i]) for i in range(len(expected))]
            _send(sock, encode_request(1, 12, 30, "burst", _fetch_body(
                topic, 0, max_wait_ms=0, min_bytes=0, partition_max_bytes=50 << 20)))
            got, body = decode_response(1, 12, _receive(sock))
            assert got == 30
            records = body["responses"][0]["partitions"][0]["records"]
            batches = list(iter_batches(records))
            assert [b.base_offset for b in batches] == offsets
            assert [len(b.values) for b in batches] == expected
            assert batches[0].values == [b"s%d" % i for i in range(10)]
    finally:
        broker.process.cleanup()


def test_a_batch_over_max_message_bytes_is_refused_with_its_size_and_the_limit(kafka_broker):
    """Produce v8+ has an error_message per partition: a batch over the topic's
    max.message.bytes is refused (MESSAGE_TOO_LARGE) with a message naming the batch's size,
    the setting and its value, as tslog's own protocol says it."""
    from tslog.protocol.kafka.record_batch import encode_batch

    topic = kafka_broker.topic("limited", max_message_bytes="2000")
    batch = encode_batch([b"z" * 5000], None, 1_700_000_000_000)
    with _connect(kafka_broker) as sock:
        _send(sock, encode_request(0, 9, 1, "too-large", {"acks": 1, "timeout_ms": 10_000,
              "topic_data": [{"name": topic, "partition_data": [{"index": 0,
                                                                  "records": batch}]}]}))
        (answer,) = decode_response(0, 9, _receive(sock))[1]["responses"][0][
            "partition_responses"]
    assert answer["error_code"] == 10  # MESSAGE_TOO_LARGE
    said = re.fullmatch(r"a batch of (\d+) bytes is larger than the topic's "
                        r"max\.message\.bytes \(2000\)", answer["error_message"] or "")
    assert said is not None and int(said.group(1)) > 2000, answer
