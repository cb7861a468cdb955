"""Every API body at every version: round trips through this codec, and kafka-python as the
oracle in both directions (bytes it encodes decode right here, bytes encoded here decode right
with it) at every version both know. Headers, unsupported versions and ApiVersions' v0
response header are checked on whole messages."""

from __future__ import annotations

import importlib
import pkgutil
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from tslog.protocol.kafka import codec
from tslog.protocol.kafka.primitives import ZERO_UUID
from tslog.protocol.kafka.errors import KafkaDecodeError, UnsupportedKafkaVersion
from tests.unit.protocol.kafka.kafka_strategies import body, scaled

CASES = [(key, version, kind) for key, (low, high) in sorted(codec.SUPPORTED.items())
         for version in range(low, high + 1) for kind in ("Request", "Response")]
IDS = [f"{codec.API_NAMES[key]}{kind}-v{version}" for key, version, kind in CASES]


def _decode(key, version, kind, data):
    return (codec.decode_request_body if kind == "Request" else codec.decode_response_body)(
        key, version, data)


@pytest.mark.parametrize("key,version,kind", CASES, ids=IDS)
@settings(max_examples=scaled(10))
@given(data=st.data())
def test_body_round_trip(key, version, kind, data):
    value = data.draw(body(codec.API_NAMES[key] + kind, version))
    encoded = codec.encode_body(key, version, kind, value)
    assert _decode(key, version, kind, encoded) == value
    assert codec.encode_body(key, version, kind, _decode(key, version, kind, encoded)) == encoded


def _kafka_python_classes():
    import kafka.protocol as kp
    from kafka.protocol.api_message import ApiMessage

    for module in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
        importlib.import_module(module.name)
    found, todo = {}, [ApiMessage]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and cls.__name__.endswith(
                ("Request", "Response")):
            found[cls.__name__] = cls
    return found


KP = _kafka_python_classes()
ORACLE = [(key, version, kind) for key, version, kind in CASES
          if (cls := KP.get(codec.API_NAMES[key] + kind)) is not None
          and cls.valid_versions[0] <= version <= cls.valid_versions[1]]


def _plain(value):
    """kafka-python's values as this codec's: bytes for buffers, dicts for structs."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def _theirs(cls, value: dict, version: int) -> dict:
    """``value`` with nested structs as kafka-python's data classes (it takes no dicts);
    each nested class is an attribute of its parent's class, named by the field's type.
    The zero uuid goes in as None, kafka-python's own reading of it: given the uuid itself,
    it writes a tagged uuid field at that default (FetchRequest v17's
    ``replica_directory_id``), where Kafka, and this codec, leave a default tag out."""
    out = {k: None if v == ZERO_UUID else v for k, v in value.items()
           if not k in RENAMED_BY_KAFKA_PYTHON}
    for field in cls._struct._fields:
        item = out.get(field.name)
        if item is None or not (field.is_struct() or field.is_struct_array()):
            continue
        build = getattr(cls, field.type_str.removeprefix("[]"))
        if field.is_struct_array():
            out[field.name] = [build(**_theirs(build, v, version), version=version) for v in item]
        else:
            out[field.name] = build(**_theirs(build, item, version), version=version)
    return out


RENAMED_BY_KAFKA_PYTHON = {"cluster_authorized_operations", "topic_authorized_operations",
                           "authorized_operations"}  # the last: DescribeGroups' (the same)


def _without_kafka_python_quirks(value):
    """kafka-python turns Metadata's and DescribeGroups' ``*authorized_operations`` into sets
    under other names (and encodes only the default), and reads an ApiVersions response with
    an error as v0 (Kafka's rule for UNSUPPORTED_VERSION). The oracle compares the rest."""
    if isinstance(value, list):
        return [_without_kafka_python_quirks(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _without_kafka_python_quirks(v) for k, v in value.items()}
    for k in out:
        if k in RENAMED_BY_KAFKA_PYTHON:
            out[k] = -(1 << 31)
    if "api_keys" in out and "error_code" in out:
        out["error_code"] = 0
    return out


def _same_fields(theirs: dict, mine: dict):
    """kafka-python's schemas are newer: a version may have gained tagged fields there. The
    fields this codec knows must agree."""
    if isinstance(mine, dict):
        return {k: v if k in RENAMED_BY_KAFKA_PYTHON else _same_fields(theirs.get(k), v)
                for k, v in mine.items()}
    if mine == ZERO_UUID and theirs is None:  # kafka-python reads the zero uuid as None
        return mine
    if isinstance(mine, list) and isinstance(theirs, list):
        return [_same_fields(t, m) for t, m in zip(theirs, mine)] + theirs[len(mine):]
    return theirs


def test_the_oracle_covers_every_api():
    assert {codec.API_NAMES[key] for key, _, _ in ORACLE} == set(codec.API_NAMES.values())
    assert len(ORACLE) > 200


@pytest.mark.parametrize("key,version,kind", ORACLE,
                         ids=[f"{codec.API_NAMES[k]}{kd}-v{v}" for k, v, kd in ORACLE])
@settings(max_examples=scaled(6))
@given(data=st.data())
def test_kafka_python_agrees(key, version, kind, data):
    cls = KP[codec.API_NAMES[key] + kind][version]
    value = _without_kafka_python_quirks(data.draw(body(codec.API_NAMES[key] + kind, version)))
    mine = codec.encode_body(key, version, kind, value)
    theirs_decoded = _plain(cls.decode(mine).to_dict(json=False))
    assert _same_fields(theirs_decoded, value) == value
    theirs = bytes(cls(**_theirs(cls, value, version)).encode())
    assert _decode(key, version, kind, theirs) == value
    assert theirs == mine


def test_request_header_and_client_id():
    data = codec.encode_request(3, 12, 77, "rdkafka", {"topics": None})
    request = codec.decode_request(data)
    assert (request.api_key, request.api_version, request.correlation_id,
            request.client_id, request.api_name) == (3, 12, 77, "rdkafka", "Metadata")
    assert request.body["topics"] is None
    assert codec.request_header_version(3, 12) == 2 and codec.request_header_version(3, 8) == 1


def test_kafka_python_request_headers_decode():
    cls = KP["FetchRequest"][12]
    message = cls(max_wait_ms=500, topics=[])
    message.with_header(correlation_id=9, client_id="kafka-python")
    request = codec.decode_request(bytes(message.encode(header=True)))
    assert (request.correlation_id, request.client_id, request.body["max_wait_ms"]) == (
        9, "kafka-python", 500)


def test_api_versions_response_header_is_always_v0():
    data = codec.encode_response(18, 3, 5, {"error_code": 0, "api_keys": [], "throttle_time_ms": 0})
    assert data[:4] == b"\x00\x00\x00\x05" and data[4:6] == b"\x00\x00"  # no tagged byte
    assert codec.decode_response(18, 3, data)[0] == 5
    metadata = codec.encode_response(3, 9, 5, {})
    assert metadata[4] == 0  # response header v1: an empty tagged-field section


def test_kafka_python_reads_a_response_with_its_header():
    cls = KP["MetadataResponse"][9]
    data = codec.encode_response(3, 9, 42, {"brokers": [{"node_id": 1, "host": "h", "port": 9092}]})
    decoded = cls.decode(data, header=True)
    assert decoded.header.correlation_id == 42
    assert decoded.brokers[0].host == "h"


@pytest.mark.parametrize("api_key,version", [(0, 99), (1, -1), (57, 0), (999, 1)])
def test_unsupported_versions_keep_the_correlation_id(api_key, version):
    data = b"".join([api_key.to_bytes(2, "big", signed=True),
                     version.to_bytes(2, "big", signed=True), (1234).to_bytes(4, "big"),
                     b"\x00\x03abc", b"\x00" * 8])
    with pytest.raises(UnsupportedKafkaVersion) as caught:
        codec.decode_request(data)
    assert caught.value.correlation_id == 1234
    assert caught.value.error_code == 35  # UNSUPPORTED_VERSION
    if api_key in codec.API_NAMES:
        assert caught.value.client_id == "abc"


def test_a_newer_api_versions_request_is_unsupported_not_malformed():
    data = codec.encode_request(18, 3, 8, "c", {})
    newer = data[:2] + (9).to_bytes(2, "big") + data[4:]
    with pytest.raises(UnsupportedKafkaVersion):
        codec.decode_request(newer)


def test_uuid_fields_decode_as_uuids():
    topic_id = uuid.uuid4()
    data = codec.encode_body(1, 13, "Request", {"topics": [{"topic_id": topic_id, "partitions": []}]})
    assert codec.decode_request_body(1, 13, data)["topics"][0]["topic_id"] == topic_id


@settings(max_examples=scaled(200))
@given(data=st.binary(max_size=200), key=st.sampled_from(sorted(codec.API_NAMES)),
       version=st.integers(0, 17))
def test_random_bytes_raise_only_typed_errors(data, key, version):
    frame = key.to_bytes(2, "big") + version.to_bytes(2, "big") + data
    try:
        codec.decode_request(frame)
    except (KafkaDecodeError, UnsupportedKafkaVersion):
        pass


@pytest.mark.parametrize("key,version,kind", CASES[::7], ids=IDS[::7])
@settings(max_examples=scaled(5))
@given(data=st.data())
def test_truncated_messages_raise_decode_errors(key, version, kind, data):
    value = data.draw(body(codec.API_NAMES[key] + kind, version))
    encoded = codec.encode_body(key, version, kind, value)
    if not encoded:
        return
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(KafkaDecodeError):
        _decode(key, version, kind, encoded[:cut])


@pytest.mark.parametrize("version", range(codec.SUPPORTED[1][0], codec.SUPPORTED[1][1] + 1))
@pytest.mark.parametrize("size", [10, 64 << 10, 1 << 20])
def test_a_fetch_response_in_chunks_is_the_message_and_keeps_large_records_uncopied(
        version, size):
    records = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 9,
             "last_stable_offset": 9, "log_start_offset": 0, "aborted_transactions": None,
             "preferred_read_replica": -1, "records": records}]}]}
    chunks = codec.encode_response_chunks(1, version, 7, body)
    assert b"".join(chunks) == codec.encode_response(1, version, 7, body)
    assert any(chunk is records for chunk in chunks) == (size >= 64 << 10)
    correlation_id, decoded = codec.decode_response(1, version, b"".join(chunks))
    assert correlation_id == 7
    assert bytes(decoded["responses"][0]["partitions"][0]["records"]) == records
