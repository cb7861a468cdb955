"""Chunked frames (records written from their own buffers) are byte for byte the frames the
plain encoders produce, so peers decode them exactly as before.

Goal: the zero-copy Fetch response and Produce request are an optimisation only; a client or
broker of any version must see the same bytes. Method: compare ``b"".join(chunks)`` with
``encode_response``/``encode_request`` across records sizes on every msgpack bin width,
several partitions and topics, and the fallback when the placeholder's bytes occur elsewhere.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tslog.protocol import chunked
from tslog.protocol.chunked import encode_request_chunks, encode_response_chunks
from tslog.protocol.messages import ApiKey, RequestHeader, encode_request, encode_response, split_response


def fetch_body(sizes_per_topic):
    return {"topics": [
        {"topic": f"t{t}", "partitions": [
            {"partition": p, "error_code": 0, "high_watermark": 7, "log_start_offset": 0,
             "records": bytes([p % 256]) * size}
            for p, size in enumerate(sizes)]}
        for t, sizes in enumerate(sizes_per_topic)]}


SIZES = [0, 1, 255, 256, 8191, 8192, 65535, 65536, 70_000]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(SIZES), min_size=1, max_size=4), min_size=1, max_size=3))
def test_fetch_response_chunks_equal_the_plain_frame(sizes_per_topic):
    body = fetch_body(sizes_per_topic)
    chunks = encode_response_chunks(42, body)
    assert b"".join(chunks) == encode_response(42, body)
    big = sum(size >= chunked.MIN_CHUNK_BYTES for sizes in sizes_per_topic for size in sizes)
    # Every large records value is its own (uncopied) buffer.
    assert sum(any(c is p["records"] for g in body["topics"] for p in g["partitions"]
                   if len(p["records"]) >= chunked.MIN_CHUNK_BYTES) for c in chunks) == big


def test_records_may_be_memoryviews():
    body = fetch_body([[70_000]])
    plain = encode_response(1, body)
    body["topics"][0]["partitions"][0]["records"] = memoryview(b"\x00" * 70_000)
    assert b"".join(encode_response_chunks(1, body)) == plain


def test_produce_request_chunks_equal_the_plain_frame():
    header = RequestHeader(ApiKey.PRODUCE, 0, 9, "client")
    body = {"acks": 1, "timeout_ms": 100, "topics": [{"topic": "a", "partitions": [
        {"partition": 0, "records": b"r" * 100_000}, {"partition": 1, "records": b"s" * 10}]}]}
    assert b"".join(encode_request_chunks(header, body)) == encode_request(header, body)


def test_placeholder_bytes_elsewhere_fall_back_to_the_whole_frame():
    body = fetch_body([[70_000]])
    body["topics"][0]["topic"] = chunked._PLACEHOLDER.hex()  # harmless
    body["topics"][0]["partitions"].append(
        {"partition": 9, "error_code": 0, "high_watermark": 0, "log_start_offset": 0,
         "records": chunked._PLACEHOLDER})  # the placeholder itself, too small to be cut out
    chunks = encode_response_chunks(3, body)
    assert chunks == [encode_response(3, body)]
    assert split_response(chunks[0][4:])[1] == body
