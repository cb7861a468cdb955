"""The Kafka listener at the byte level: an API or version it does not serve is answered
UNSUPPORTED_VERSION and the connection goes on; garbage closes that connection only; the
broker refuses to start when the Kafka listener would bypass a configured SASL login."""

from __future__ import annotations

import socket
import struct

from tslog.protocol.kafka import decode_response, encode_request

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
        # CreatePartitions (37): not in the codec, not served.
        _send(sock, struct.pack(">hhih", 37, 0, 11, -1))
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


def test_a_kafka_listener_with_a_sasl_login_refuses_to_start(broker_factory):
    broker = broker_factory(args=["--kafka-listen", "127.0.0.1:0"],
                            env={"TSLOG_SASL_MECHANISMS": "SCRAM-SHA-256"}, start=False)
    broker.launch()
    assert broker.exit_code() == 2
    assert "kafka_listen cannot be used with sasl_mechanisms" in broker.log_text()


def test_the_authorizer_judges_kafka_requests_as_it_judges_native_ones(broker_factory):
    """ACLs on, none granted (and no allow-everyone): a Kafka Produce is denied per
    partition, a ListOffsets too, and Metadata hides the topic, as on the native port."""
    from tslog.client import Admin
    from tslog.protocol.kafka.record_batch import encode_batch
    from tests.helpers.broker_process import free_port

    port = free_port()
    broker = broker_factory(args=["--kafka-listen", f"127.0.0.1:{port}"])
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
