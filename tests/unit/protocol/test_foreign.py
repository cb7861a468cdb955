"""A Kafka client's first request is recognised as Kafka's; no tslog request ever is."""

import struct

from hypothesis import given, strategies as st

from tslog.protocol.foreign import describe_kafka_request
from tslog.protocol.messages import ApiKey, RequestHeader, encode_request


def kafka_request(api_key: int, version: int, client_id: bytes | None) -> bytes:
    client = struct.pack(">h", -1) if client_id is None else (
        struct.pack(">h", len(client_id)) + client_id)
    return struct.pack(">hhi", api_key, version, 7) + client + b"\x00"


def test_librdkafkas_first_request_is_named_with_its_client_id():
    assert (describe_kafka_request(kafka_request(18, 3, b"rdkafka"))
            == "Kafka's ApiVersions v3 request (client id 'rdkafka')")


def test_an_old_clients_metadata_request_without_client_id_is_named():
    assert describe_kafka_request(kafka_request(3, 0, None)) == "Kafka's Metadata v0 request"


def test_bytes_that_only_start_like_a_header_are_not_kafka():
    assert describe_kafka_request(b"\x00\x12\x00") is None  # too short
    assert describe_kafka_request(struct.pack(">hhih", 18, 3, 7, 500) + b"abc") is None  # id
    assert describe_kafka_request(struct.pack(">hhih", 18, 3, -5, 0)) is None  # correlation


@given(correlation_id=st.integers(0, 2**31 - 1), client_id=st.none() | st.text(max_size=20),
       topics=st.lists(st.text(min_size=1, max_size=10), max_size=3))
def test_no_tslog_request_is_taken_for_kafka(correlation_id, client_id, topics):
    frame = encode_request(RequestHeader(ApiKey.METADATA, 0, correlation_id, client_id),
                           {"topics": topics})
    assert describe_kafka_request(frame[4:]) is None


def test_a_long_client_id_is_quoted_by_a_bounded_prefix():
    described = describe_kafka_request(kafka_request(18, 3, b"k" * 30_000))
    assert described.startswith("Kafka's ApiVersions v3 request (client id 'kkk")
    assert described.endswith("'...)") and len(described) < 150
