"""Request/response envelope codec and schemas (protocol/messages.py, protocol/schema.py).

Goal: the wire contract of docs/protocol.md is frozen (golden bytes), every API's messages
survive encode -> decode unchanged, and no input whatsoever makes the decoders raise anything
but their typed errors, because the broker maps exactly those to "close" or "error response".
Method: strategies are derived from the same schema tables the codec validates against, so a
new API is covered by the round-trip and garbage tests without touching this file.
"""

from __future__ import annotations

import msgpack
import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.python_calls import calls_by_name
from tslog.protocol.errors import ErrorCode, LocalProtocolError
from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import (
    REQUEST_SCHEMAS,
    RESPONSE_SCHEMAS,
    SUPPORTED_VERSIONS,
    ApiKey,
    InvalidRequestError,
    InvalidResponseError,
    MalformedRequestError,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    error_response_body,
)
from tslog.protocol.records import build_batch
from tslog.protocol.schema import (
    Bin, Bool, Choice, Int, ListOf, MapOf, Nullable, Str, Struct,
)

REQUEST_ERRORS = (MalformedRequestError, UnknownApiKeyError, UnsupportedVersionError,
                  InvalidRequestError)


def strategy_for(schema) -> st.SearchStrategy:
    """A hypothesis strategy producing values that match ``schema``."""
    if isinstance(schema, Int):
        return st.integers(schema.minimum, schema.maximum)
    if isinstance(schema, Choice):
        return st.sampled_from(sorted(schema.values))
    if isinstance(schema, Str):
        return st.text(max_size=20)
    if isinstance(schema, Bin):
        return st.binary(max_size=40)
    if isinstance(schema, Bool):
        return st.booleans()
    if isinstance(schema, Nullable):
        return st.none() | strategy_for(schema.inner)
    if isinstance(schema, ListOf):
        return st.lists(strategy_for(schema.item), max_size=3)
    if isinstance(schema, MapOf):
        return st.dictionaries(st.text(max_size=10), strategy_for(schema.value), max_size=3)
    if isinstance(schema, Struct):
        required = {k: strategy_for(v) for k, v in schema.fields.items()
                    if k not in schema.optional}
        optional = {k: strategy_for(schema.fields[k]) for k in schema.optional}
        return st.fixed_dictionaries(required, optional=optional)
    raise AssertionError(f"no strategy for {schema!r}")


def frame_body(frame: bytes) -> bytes:
    """Cut a frame with the real decoder, so tests also check the length prefix."""
    (body,) = FrameReceiver().feed(frame)
    return body


def request_frame(api_key, body, correlation_id=5, api_version=0, client_id="test") -> bytes:
    return encode_request(RequestHeader(api_key, api_version, correlation_id, client_id), body,
                          validate=False)


# --------------------------------------------------------------------------- golden bytes


def test_api_versions_request_golden_bytes():
    frame = encode_request(RequestHeader(ApiKey.API_VERSIONS, 0, 7, "t"), {})
    # length 7; fixarray(5): 18, 0, 7, fixstr "t", fixmap(0)
    assert frame == bytes.fromhex("00000007" "95" "12" "00" "07" "a174" "80")
    header, body = decode_request(frame_body(frame))
    assert header == RequestHeader(ApiKey.API_VERSIONS, 0, 7, "t") and body == {}


def test_produce_response_golden_bytes():
    body = {"topics": [{"topic": "e", "partitions": [
        {"partition": 1, "error_code": 0, "base_offset": 300, "log_append_time": 5,
         "log_start_offset": 0}]}]}
    frame = encode_response(9, body, api_key=ApiKey.PRODUCE)
    expected_body = (
        "92" "09" "81" "a6746f70696373" "91" "82" "a5746f706963" "a165"
        "aa706172746974696f6e73" "91" "85" "a9706172746974696f6e" "01"
        "aa6572726f725f636f6465" "00" "ab626173655f6f6666736574" "cd012c"
        "af6c6f675f617070656e645f74696d65" "05" "b06c6f675f73746172745f6f6666736574" "00"
    )
    assert frame[4:].hex() == expected_body
    assert frame[:4] == len(bytes.fromhex(expected_body)).to_bytes(4, "big")
    assert decode_response(frame_body(frame), ApiKey.PRODUCE) == (9, body)


def test_records_travel_as_bin():
    body = {"acks": 1, "timeout_ms": 100,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "records": b"\x01\x02"}]}]}
    raw = msgpack.unpackb(frame_body(request_frame(ApiKey.PRODUCE, body)), raw=True)
    assert raw[4][b"topics"][0][b"partitions"][0][b"records"] == b"\x01\x02"


# ---------------------------------------------------------------------------- round trips


@st.composite
def any_request(draw):
    (key, version) = draw(st.sampled_from(sorted(REQUEST_SCHEMAS)))
    header = RequestHeader(ApiKey(key), version, draw(st.integers(0, 2**31 - 1)),
                           draw(st.none() | st.text(max_size=10)))
    return header, draw(strategy_for(REQUEST_SCHEMAS[key, version]))


@st.composite
def any_response(draw):
    (key, version) = draw(st.sampled_from(sorted(RESPONSE_SCHEMAS)))
    return key, version, draw(st.integers(0, 2**31 - 1)), draw(
        strategy_for(RESPONSE_SCHEMAS[key, version]))


@given(any_request())
def test_every_request_round_trips(request):
    header, body = request
    assert decode_request(frame_body(encode_request(header, body))) == (header, body)


@given(any_response())
def test_every_response_round_trips(response):
    key, version, correlation_id, body = response
    frame = encode_response(correlation_id, body, api_key=key, api_version=version)
    assert decode_response(frame_body(frame), key, version) == (correlation_id, body)


def test_schemas_cover_every_api_and_version():
    expected = {(key, v) for key, (low, high) in SUPPORTED_VERSIONS.items()
                for v in range(low, high + 1)}
    assert set(REQUEST_SCHEMAS) == expected == set(RESPONSE_SCHEMAS)


@pytest.mark.parametrize("api_key", list(ApiKey))
@pytest.mark.parametrize("code", [ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_VERSION,
                                  ErrorCode.UNKNOWN_API_KEY])
def test_top_level_error_body_is_accepted_for_every_api(api_key, code):
    message = "bad" if code == ErrorCode.INVALID_REQUEST else None
    body = error_response_body(api_key, code, message)
    frame = encode_response(3, body, api_key=api_key)
    correlation_id, decoded = decode_response(frame_body(frame), api_key)
    assert correlation_id == 3 and decoded["error_code"] == code
    assert decoded.get("error_message") == message


def test_api_versions_error_lists_supported_versions():
    body = error_response_body(ApiKey.API_VERSIONS, ErrorCode.UNSUPPORTED_VERSION)
    assert {entry["api_key"] for entry in body["api_keys"]} == set(ApiKey)


# ------------------------------------------------------------------------------- garbage


@given(st.binary(max_size=200))
def test_garbage_request_raises_only_typed_errors(data):
    try:
        decode_request(data)
    except REQUEST_ERRORS:
        pass


@given(any_request(), st.data())
def test_mutated_request_raises_only_typed_errors(request, data):
    body = bytearray(frame_body(encode_request(*request)))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(body) - 1))
        body[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    try:
        decode_request(bytes(body[:cut]))
    except REQUEST_ERRORS:
        pass


@given(any_response(), st.data())
def test_mutated_response_raises_only_invalid_response(response, data):
    key, version, correlation_id, body = response
    raw = bytearray(frame_body(encode_response(correlation_id, body)))
    position = data.draw(st.integers(0, len(raw) - 1))
    raw[position] = data.draw(st.integers(0, 255))
    try:
        decode_response(bytes(raw[:data.draw(st.integers(0, len(raw)))]), key, version)
    except InvalidResponseError:
        pass


@pytest.mark.parametrize("payload", [
    b"",                                          # empty
    b"\xc1",                                      # never-used msgpack byte
    msgpack.packb({"a": 1}),                      # not an array
    msgpack.packb([18, 0, 1, None]),              # 4 items
    msgpack.packb([18, 0, 1, None, {}, 1]),       # 6 items
    msgpack.packb([18, 0, 1, None, []]),          # body not a map
    msgpack.packb([18, 0, 1, 5, {}]),             # client id not str
    msgpack.packb([18, 0, -1, None, {}]),         # negative correlation id
    msgpack.packb([18, 0, 2**31, None, {}]),      # correlation id too big
    msgpack.packb([True, 0, 1, None, {}]),        # bool api key
    msgpack.packb([18, 0, 1, None, {}]) + b"x",   # trailing bytes
    msgpack.packb([18, 0, 1, None, {1: 2}]),        # int map key
    b"\x91" * 5000,                               # nesting deeper than msgpack's stack
])
def test_bad_envelope_is_malformed(payload):
    with pytest.raises(MalformedRequestError):
        decode_request(payload)


def test_unknown_api_key_keeps_correlation_id():
    with pytest.raises(UnknownApiKeyError) as info:
        decode_request(msgpack.packb([77, 0, 41, None, {}]))
    assert info.value.correlation_id == 41
    assert info.value.response_body() == {"error_code": ErrorCode.UNKNOWN_API_KEY}


def test_unsupported_version_keeps_correlation_id():
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(msgpack.packb([ApiKey.METADATA, 1, 42, None, {"topics": None}]))
    assert info.value.correlation_id == 42
    assert info.value.response_body()["error_code"] == ErrorCode.UNSUPPORTED_VERSION


# --------------------------------------------------------------------- schema violations

_GOOD_FETCH = {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1000,
               "topics": [{"topic": "t", "partitions": [
                   {"partition": 0, "fetch_offset": 0, "max_bytes": 100}]}]}


def _fetch_with(**changes):
    body = {**_GOOD_FETCH, "topics": [{"topic": "t", "partitions": [
        {**_GOOD_FETCH["topics"][0]["partitions"][0], **changes}]}]}
    for key, value in list(changes.items()):
        if value is _DELETE:
            del body["topics"][0]["partitions"][0][key]
    return body


_DELETE = object()


@pytest.mark.parametrize("body, where", [
    (_fetch_with(fetch_offset="0"), "fetch_offset: expected int, got str"),
    (_fetch_with(fetch_offset=_DELETE), "missing key(s) fetch_offset"),
    (_fetch_with(extra=1), "unknown key 'extra'"),
    (_fetch_with(partition=-1), "partition: -1 is outside"),
    (_fetch_with(partition=True), "partition: expected int, got bool"),
    (_fetch_with(max_bytes=None), "max_bytes: expected int, got nil"),
    ({**_GOOD_FETCH, "topics": {"t": 0}}, "topics: expected list, got dict"),
    ({**_GOOD_FETCH, "max_wait_ms": 2**40}, "max_wait_ms: 1099511627776 is outside"),
])
def test_schema_violations_are_invalid_request(body, where):
    with pytest.raises(InvalidRequestError) as info:
        decode_request(frame_body(request_frame(ApiKey.FETCH, body, correlation_id=77)))
    assert info.value.correlation_id == 77
    assert info.value.error_code == ErrorCode.INVALID_REQUEST
    assert where in info.value.message
    response = info.value.response_body()
    assert response["error_code"] == ErrorCode.INVALID_REQUEST
    assert where in response["error_message"]


@pytest.mark.parametrize("api_key, body", [
    (ApiKey.PRODUCE, {"acks": 2, "timeout_ms": 1, "topics": []}),
    (ApiKey.PRODUCE, {"acks": True, "timeout_ms": 1, "topics": []}),
    (ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 1, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "records": "text, not bin"}]}]}),
    (ApiKey.LIST_OFFSETS, {"replica_id": -1, "timestamp_type": "wall", "topics": []}),
    (ApiKey.CREATE_TOPICS, {"topics": [{"topic": "t", "partitions": 1,
                                        "replication_factor": 1, "configs": {"a": 1}}],
                            "timeout_ms": 0}),
    (ApiKey.ALTER_CONFIGS, {"resources": [], "validate_only": 0}),
    (ApiKey.OFFSET_FETCH, {"group_id": "g", "topics": [{"topic": "t", "partitions": [-3]}]}),
    (ApiKey.API_VERSIONS, {"x": 1}),
])
def test_more_schema_violations(api_key, body):
    with pytest.raises(InvalidRequestError):
        decode_request(frame_body(request_frame(api_key, body)))


def test_encode_request_refuses_an_invalid_body():
    with pytest.raises(LocalProtocolError):
        encode_request(RequestHeader(ApiKey.METADATA, 0, 1, None), {"topics": "t"})


def test_response_schema_mismatch_is_invalid_response():
    frame = encode_response(4, {"topics": [{"topic": "t"}]})
    with pytest.raises(InvalidResponseError) as info:
        decode_response(frame_body(frame), ApiKey.DELETE_TOPICS)
    assert info.value.correlation_id == 4
    # an "error body" whose code is NONE is not an error body
    with pytest.raises(InvalidResponseError):
        decode_response(frame_body(encode_response(4, {"error_code": 0})), ApiKey.FETCH)


def test_error_body_is_accepted_for_a_version_without_schema():
    frame = encode_response(6, error_response_body(ApiKey.METADATA, ErrorCode.UNSUPPORTED_VERSION))
    assert decode_response(frame_body(frame), ApiKey.METADATA, 7)[1]["error_code"] == 35
    with pytest.raises(InvalidResponseError):
        decode_response(frame_body(encode_response(6, {"topics": []})), ApiKey.METADATA, 7)


def _offsets_at_times_frame(partitions: int, times: int) -> memoryview:
    body = {"timestamp_type": "append", "topics": [{"topic": "traffic", "partitions": [
        {"partition": p, "timestamps": list(range(1_000, 1_000 + times))}
        for p in range(partitions)]}]}
    return memoryview(encode_request(RequestHeader(ApiKey.OFFSETS_AT_TIMES, 0, 1, "c"),
                                     body))[4:]


def test_a_large_request_without_records_is_not_walked_item_by_item():
    """The record-views walk (Python work per msgpack item) is for a Produce's records only:
    a 1,000-partition chart's OffsetsAtTimes (61,000 times, over the views threshold) is
    decoded by msgpack's C code, as a small one is, however the connection asks."""
    frame = _offsets_at_times_frame(1_000, 61)
    calls, (header, body) = calls_by_name(lambda: decode_request(frame, record_views=True))
    assert header.api_key == ApiKey.OFFSETS_AT_TIMES
    assert len(body["topics"][0]["partitions"]) == 1_000
    assert calls["python"] < 50


@pytest.mark.parametrize("received_into", ["bytes", "numpy"])
def test_a_large_produce_keeps_its_records_in_the_frame(received_into):
    """Whatever the frame was received into: the broker's large frames are numpy arrays
    (``frames.unzeroed_buffer``)."""
    records = build_batch([b"x" * 100] * 1_000)
    version = SUPPORTED_VERSIONS[ApiKey.PRODUCE][1]
    frame = encode_request(RequestHeader(ApiKey.PRODUCE, version, 1, "c"), {
        "acks": 1, "timeout_ms": 1_000,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "records": records}]}]})[4:]
    if received_into == "numpy":
        frame = numpy.frombuffer(frame, numpy.uint8).copy()
    _, body = decode_request(frame, record_views=True)
    viewed = body["topics"][0]["partitions"][0]["records"]
    assert type(viewed) is memoryview and bytes(viewed) == records
