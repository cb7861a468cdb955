"""Recognising a Kafka client that dialled a tslog port.

Both protocols frame a message with a 4-byte big-endian length, so a Kafka client's first
request arrives as a well-formed frame whose body is not msgpack. Left at that, the broker
can only log "not msgpack" and close, and the Kafka user sees a dropped connection. Every
Kafka request body starts with the same header (api key, api version, correlation id,
client id), and a tslog request body starts with a msgpack array marker, so the two cannot
be confused: naming the Kafka request in the log tells the operator what happened.
"""

from __future__ import annotations

import struct

_KAFKA_HEADER = struct.Struct(">hhih")  # api key, api version, correlation id, client id length
_KAFKA_MAX_API_KEY = 100  # Kafka's keys run from 0 to the 70s
_KAFKA_MAX_VERSION = 30
# What clients send first: ApiVersions (every modern client), Metadata (old clients, or a
# client told its broker version), the SASL handshake (a client configured for SASL).
_CLIENT_ID_SHOWN = 64  # bytes of a foreign client's id quoted in the broker's log
_KAFKA_UNSUPPORTED_VERSION = struct.pack(">h", 35)
_KAFKA_API_NAMES = {18: "ApiVersions", 3: "Metadata", 17: "SaslHandshake", 36: "SaslAuthenticate"}


def is_kafka_refusal(body) -> bool:
    """Whether a response frame ``body`` is a Kafka listener's refusal of a tslog request.

    Why it looks like this: a Kafka listener reads a tslog request's first bytes as Kafka's
    header (api key, version, correlation id), finds no such API, and answers Kafka's
    shortest error: the int32 correlation id it read, then UNSUPPORTED_VERSION (35) as an
    int16, six bytes in all, which is never a tslog response ([id, map] in msgpack)."""
    return len(body) == 6 and bytes(body[4:6]) == _KAFKA_UNSUPPORTED_VERSION


def describe_kafka_request(body) -> str | None:
    """``"Kafka's ApiVersions v3 request (client id 'rdkafka')"`` if ``body`` (a frame body)
    starts with a plausible Kafka request header, else None."""
    if len(body) < _KAFKA_HEADER.size:
        return None
    api_key, version, correlation_id, client_id_length = _KAFKA_HEADER.unpack_from(body)
    if not (0 <= api_key <= _KAFKA_MAX_API_KEY and 0 <= version <= _KAFKA_MAX_VERSION
            and correlation_id >= 0
            and -1 <= client_id_length <= len(body) - _KAFKA_HEADER.size):
        return None
    name = _KAFKA_API_NAMES.get(api_key, f"api key {api_key}")
    start = _KAFKA_HEADER.size
    shown = min(client_id_length, _CLIENT_ID_SHOWN)  # logged: a bounded prefix only
    client = ("" if client_id_length <= 0 else
              f" (client id {bytes(body[start:start + shown]).decode('utf-8', 'replace')!r}"
              f"{'...' if shown < client_id_length else ''})")
    return f"Kafka's {name} v{version} request{client}"
