"""Kafka requests and responses as whole messages: header plus body, both directions.

Sans-I/O like the rest of ``tslog.protocol``: functions take and return ``bytes`` without the
4-byte size prefix that frames every Kafka message; decoded ``bytes``/``records`` fields are
views of the input (see ``primitives``), so a Produce request's batches are not copied (the same prefix tslog's own frames use, so
the listener reuses its framing). The broker calls ``decode_request`` and
``encode_response``; tests and a future client call ``encode_request`` and
``decode_response``.

Header versions follow Kafka's rule: a request in a flexible version of its API has header v2
(client id still with an int16 length, then tagged fields), else v1; a response has header v1
(with tagged fields) in flexible versions, else v0 — except ApiVersions, whose response header
is always v0 so a client that asked with a version the broker does not know can still read the
answer. Unknown API keys and versions raise ``UnsupportedKafkaVersion`` carrying the
correlation id; malformed bytes raise ``KafkaDecodeError``; nothing else escapes a decode.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from . import schema
from .errors import KafkaDecodeError, UnsupportedKafkaVersion
from .primitives import ChunkWriter

API_NAMES = {
    15: "DescribeGroups", 16: "ListGroups", 37: "CreatePartitions", 42: "DeleteGroups",
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
    9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
    13: "LeaveGroup", 14: "SyncGroup", 17: "SaslHandshake", 18: "ApiVersions",
    19: "CreateTopics", 20: "DeleteTopics", 21: "DeleteRecords", 22: "InitProducerId",
    32: "DescribeConfigs",
    36: "SaslAuthenticate", 47: "OffsetDelete",
    43: "ElectLeaders", 44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments", 60: "DescribeCluster", 35: "DescribeLogDirs",
}
API_KEYS = {name: key for key, name in API_NAMES.items()}
API_VERSIONS = 18
# Every version of the vendored schemas is decoded and encoded; which ones the broker
# advertises in ApiVersions is the listener's choice.
SUPPORTED = {key: schema.valid_versions(f"{name}Request") for key, name in API_NAMES.items()}

_FIXED_HEADER = struct.Struct(">hhi")
_DECODE_ERRORS = (ValueError, TypeError, OverflowError, RecursionError)


class KafkaRequest(NamedTuple):
    """A decoded request: the header's fields and the body as a dict."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict

    @property
    def api_name(self) -> str:
        return API_NAMES[self.api_key]


def _name(api_key: int, api_version: int, kind: str, correlation_id: int | None = None,
          client_id: str | None = None) -> str:
    name = API_NAMES.get(api_key)
    low, high = SUPPORTED.get(api_key, (1, 0))
    if name is None or not low <= api_version <= high:
        raise UnsupportedKafkaVersion(api_key, api_version, correlation_id, client_id)
    return name + kind


def request_header_version(api_key: int, api_version: int) -> int:
    return 2 if schema.is_flexible(_name(api_key, api_version, "Request"), api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS:
        return 0
    return 1 if schema.is_flexible(_name(api_key, api_version, "Response"), api_version) else 0


def _decode_body(name: str, version: int, buf: bytes, pos: int) -> dict:
    read, _ = schema.compiled(name, version)
    try:
        body, _end = read(buf, pos)
    except KafkaDecodeError:
        raise
    except _DECODE_ERRORS as exc:  # e.g. a uuid or float the schema types cannot hold
        raise KafkaDecodeError(f"{name} v{version}: {exc}") from None
    return body


def decode_request(data) -> KafkaRequest:
    """A request from its bytes (without the size prefix). Trailing bytes after the body are
    ignored, as Kafka's own broker does."""
    buf = memoryview(data).cast("B")
    if len(buf) < _FIXED_HEADER.size:
        raise KafkaDecodeError(f"request of {len(buf)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _FIXED_HEADER.unpack_from(buf)
    if api_key not in API_NAMES:
        raise UnsupportedKafkaVersion(api_key, api_version, correlation_id)
    try:
        header_version = request_header_version(api_key, api_version)
    except UnsupportedKafkaVersion:
        client_id = _client_id_or_none(buf)
        raise UnsupportedKafkaVersion(api_key, api_version, correlation_id, client_id) from None
    read_header, _ = schema.compiled("RequestHeader", header_version)
    header, pos = read_header(buf, 0)
    body = _decode_body(API_NAMES[api_key] + "Request", api_version, buf, pos)
    return KafkaRequest(api_key, api_version, correlation_id, header["client_id"], body)


def _client_id_or_none(buf: bytes) -> str | None:
    read_header, _ = schema.compiled("RequestHeader", 1)
    try:
        return read_header(buf, 0)[0]["client_id"]
    except KafkaDecodeError:
        return None


def encode_request(api_key: int, api_version: int, correlation_id: int,
                   client_id: str | None, body: dict) -> bytes:
    name = _name(api_key, api_version, "Request")
    _, write_header = schema.compiled("RequestHeader", request_header_version(api_key, api_version))
    out = bytearray()
    write_header(out, {"request_api_key": api_key, "request_api_version": api_version,
                       "correlation_id": correlation_id, "client_id": client_id})
    schema.compiled(name, api_version)[1](out, body)
    return bytes(out)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> bytes:
    return b"".join(encode_response_chunks(api_key, api_version, correlation_id, body))


def encode_response_chunks(api_key: int, api_version: int, correlation_id: int,
                           body: dict) -> list:
    """The response as a list of byte strings to send in order (``encode_response``'s
    bytes, joined): large ``bytes`` fields, a Fetch response's records, are kept as they
    are, so the broker writes them with no copy into the message (``ChunkWriter``)."""
    name = _name(api_key, api_version, "Response")
    _, write_header = schema.compiled("ResponseHeader", response_header_version(api_key, api_version))
    out = ChunkWriter()
    write_header(out, {"correlation_id": correlation_id})
    schema.compiled(name, api_version)[1](out, body)
    return out.chunks()


def decode_response(api_key: int, api_version: int, data) -> tuple[int, dict]:
    """``(correlation_id, body)`` of a response to a request of ``api_key``/``api_version``
    (a response does not name its API: the caller matches it by correlation id)."""
    name = _name(api_key, api_version, "Response")
    buf = memoryview(data).cast("B")
    read_header, _ = schema.compiled("ResponseHeader", response_header_version(api_key, api_version))
    header, pos = read_header(buf, 0)
    return header["correlation_id"], _decode_body(name, api_version, buf, pos)


def decode_request_body(api_key: int, api_version: int, data) -> dict:
    """A request body alone (no header), for tests and for tools that split headers off."""
    return _decode_body(_name(api_key, api_version, "Request"), api_version, memoryview(data).cast("B"), 0)


def encode_body(api_key: int, api_version: int, kind: str, body: dict) -> bytes:
    """A request (``kind="Request"``) or response body alone, without a header."""
    out = bytearray()
    schema.compiled(_name(api_key, api_version, kind), api_version)[1](out, body)
    return bytes(out)


def decode_response_body(api_key: int, api_version: int, data) -> dict:
    return _decode_body(_name(api_key, api_version, "Response"), api_version, memoryview(data).cast("B"), 0)
