"""Request and response messages: the envelope codec over the API tables of ``api_schemas.py``.

This module is the executable form of ``docs/protocol.md``. A request frame body is the
msgpack array ``[api_key, api_version, correlation_id, client_id, body]``; a response frame
body is ``[correlation_id, body]``. Bodies stay plain dicts (what msgpack gives), checked
once against the API's declarative schema (``schema.py``): no per-message classes to build,
so decoding costs one ``unpackb`` plus one walk over O(topics x partitions) values.

Bad input can only ever raise the typed errors below, so a server needs exactly four
``except`` clauses and never leaks a traceback:

- ``MalformedRequestError``: not msgpack or a bad envelope. Close the connection.
- ``UnknownApiKeyError`` / ``UnsupportedVersionError`` / ``InvalidRequestError``: answer
  ``error_response_body(...)`` with the error's ``correlation_id`` and keep the connection.

A response to any API may be a bare top-level error body, ``{"error_code": int}`` optionally
with ``"error_message"``; ``decode_response`` accepts it for every API.
"""

from __future__ import annotations

from typing import NamedTuple

import msgpack

from .api_schemas import (  # re-exported: callers know them as messages.*
    API_KEYS,
    REQUEST_SCHEMAS,
    RESPONSE_SCHEMAS,
    SUPPORTED_VERSIONS,
    ApiKey,
)
from .errors import ErrorCode, LocalProtocolError, RemoteProtocolError
from .foreign import describe_kafka_request
from .frames import encode_frame
from .msgpack_views import unpack_with_views
from .packing import pack
from .schema import ERROR_CODE, NULLABLE_STR, SchemaError, Struct

CORRELATION_ID_MAX = 2**31 - 1


# Special ListOffsets timestamps.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


# ------------------------------------------------------------------------------------ errors


class MalformedRequestError(RemoteProtocolError):
    """Not msgpack, or not a valid request envelope: the stream cannot be trusted; close it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ErrorCode.INVALID_REQUEST)


class ForeignProtocolError(MalformedRequestError):
    """The first request is another protocol's (Kafka's): close, and tell the operator once."""


class RequestError(RemoteProtocolError):
    """A well-framed request the server must refuse with an error response (connection kept).

    Attributes:
        correlation_id: to echo in the error response.
        api_key: the request's api key (an int; maybe not an ``ApiKey``).
    """

    def __init__(self, message: str, error_code: ErrorCode, correlation_id: int, api_key: int):
        super().__init__(message, error_code)
        self.correlation_id = correlation_id
        self.api_key = api_key

    def response_body(self) -> dict:
        """The body to answer with: see ``error_response_body``."""
        return error_response_body(self.api_key, self.error_code)


class UnknownApiKeyError(RequestError):
    def __init__(self, correlation_id: int, api_key: int = -1) -> None:
        super().__init__(f"unknown api key {api_key}", ErrorCode.UNKNOWN_API_KEY,
                         correlation_id, api_key)


class UnsupportedVersionError(RequestError):
    def __init__(self, correlation_id: int, api_key: int = -1, api_version: int = -1) -> None:
        super().__init__(f"api key {api_key} version {api_version} is not supported",
                         ErrorCode.UNSUPPORTED_VERSION, correlation_id, api_key)
        self.api_version = api_version


class InvalidRequestError(RequestError):
    """The body failed its schema; ``message`` says where and why (safe to send back)."""

    def __init__(self, correlation_id: int, message: str, api_key: int = -1) -> None:
        super().__init__(message, ErrorCode.INVALID_REQUEST, correlation_id, api_key)
        self.message = message

    def response_body(self) -> dict:
        return error_response_body(self.api_key, self.error_code, self.message)


class InvalidResponseError(RemoteProtocolError):
    """A response that is not msgpack, has a bad envelope, or fails its API's schema."""

    def __init__(self, message: str, correlation_id: int | None = None) -> None:
        super().__init__(message, ErrorCode.UNKNOWN_SERVER_ERROR)
        self.correlation_id = correlation_id


class KafkaAnswerError(InvalidResponseError):
    """The peer answered in Kafka's wire protocol: the address is a Kafka listener."""


def compile_schemas() -> None:
    """Compile every request and response schema's fast path now (``Struct.compile``)."""
    for schema in (*REQUEST_SCHEMAS.values(), *RESPONSE_SCHEMAS.values()):
        schema.compile()


# The top-level error body any API may answer with.
ERROR_BODY_SCHEMA = Struct({"error_code": ERROR_CODE, "error_message": NULLABLE_STR},
                           optional=frozenset({"error_message"}))


def error_response_body(api_key: int, error_code: int, message: str | None = None) -> dict:
    """Return a top-level error body for any API: ``{"error_code": n[, "error_message": s]}``.

    For ApiVersions the body also lists ``api_keys`` (as Kafka does), so a client that sent an
    unsupported version learns which versions it may use.
    """
    body: dict = {"error_code": int(error_code)}
    if message is not None:
        body["error_message"] = message
    if api_key == ApiKey.API_VERSIONS and message is None:
        body["api_keys"] = api_versions_list()
    return body


def api_versions_list() -> list[dict]:
    """``SUPPORTED_VERSIONS`` in the ApiVersions response shape."""
    return [{"api_key": int(key), "min_version": low, "max_version": high}
            for key, (low, high) in SUPPORTED_VERSIONS.items()]


# ------------------------------------------------------------------------------------ codecs


def _unpack(data) -> object:
    """msgpack.unpackb with limits bounded by the input; raises only ValueError-like errors."""
    size = len(data)
    return msgpack.unpackb(
        data, raw=False, strict_map_key=True, use_list=True,
        max_str_len=size, max_bin_len=size, max_array_len=size, max_map_len=size,
        max_ext_len=0,
    )


def check_request(header: RequestHeader, body: dict) -> None:
    """Raise LocalProtocolError unless this side may send ``body`` with ``header``."""
    api_key, api_version, correlation_id, _ = header
    if not 0 <= correlation_id <= CORRELATION_ID_MAX:
        raise LocalProtocolError(f"correlation id {correlation_id} out of range")
    schema = REQUEST_SCHEMAS.get((api_key, api_version))
    if schema is None:
        raise LocalProtocolError(f"no schema for api key {api_key} version {api_version}")
    try:
        schema.check(body)
    except SchemaError as exc:
        raise LocalProtocolError(f"invalid request body: {exc}") from None


def encode_request(header: RequestHeader, body: dict, *, validate: bool = True) -> bytes:
    """Return a complete request frame (length prefix + msgpack).

    Raises:
        LocalProtocolError: ``validate`` and the body fails its schema, or the api key /
            version / correlation id is not one this side can send.
    """
    api_key, api_version, correlation_id, client_id = header
    if validate:
        check_request(header, body)
    try:
        payload = pack([int(api_key), api_version, correlation_id, client_id, body])
    except (TypeError, ValueError, OverflowError) as exc:
        raise LocalProtocolError(f"request body cannot be packed: {exc}") from None
    return encode_frame(payload)


def _is_int(value) -> bool:
    return type(value) is int


# Builds NamedTuples (headers here, events in ``connection.py``) without their Python-level
# __new__, on paths that run for every request and response.
new_tuple = tuple.__new__


# How a Produce request's envelope starts: a 5-item array, then api key 0 as a positive
# fixint (what every msgpack packer writes for 0; any other spelling is decoded by copying).
# (Compared as bytes: the broker receives a large frame into a numpy array, whose ``==``
# compares element by element.)
_PRODUCE_ENVELOPE = b"\x95\x00"


def decode_request(frame_body, *, record_views: bool = False) -> tuple[RequestHeader, dict]:
    """Parse and validate one request frame body (without the 4-byte prefix).

    ``record_views``: as in ``split_response``: a Produce request's records stay in
    ``frame_body``. Asked for another request, it is ignored: only a Produce carries
    records, and the view walk costs Python work per msgpack item, so a large request of
    many small items (an OffsetsAtTimes of every partition's chart edges) would pay it on
    each of them for no view at all.

    Returns:
        (RequestHeader with ``api_key`` an ``ApiKey``, body dict).

    Raises:
        MalformedRequestError, UnknownApiKeyError, UnsupportedVersionError,
        InvalidRequestError; nothing else, whatever the bytes.
    """
    try:
        message = (unpack_with_views(frame_body)
                   if record_views and bytes(frame_body[:2]) == _PRODUCE_ENVELOPE
                   else _unpack(frame_body))
    except Exception as exc:  # msgpack signals garbage with many exception types
        kafka = describe_kafka_request(frame_body)
        if kafka is not None:
            raise ForeignProtocolError(
                f"a Kafka client connected: its first request is {kafka}; this port speaks "
                "tslog's protocol, not Kafka's (use tslog's client or CLI; see the README's "
                "'Kafka compatibility')") from None
        raise MalformedRequestError(f"request is not msgpack: {type(exc).__name__}") from None
    if type(message) is not list or len(message) != 5:
        raise MalformedRequestError("request is not a 5-item array")
    api_key, api_version, correlation_id, client_id, body = message
    if not (type(api_key) is int and type(api_version) is int and type(correlation_id) is int
            and (client_id is None or type(client_id) is str) and type(body) is dict):
        raise MalformedRequestError("request envelope has the wrong types")
    if not 0 <= correlation_id <= CORRELATION_ID_MAX:
        raise MalformedRequestError(f"correlation id {correlation_id} out of range")
    key = API_KEYS.get(api_key)  # a dict lookup; ApiKey(n) runs Python code
    if key is None:
        raise UnknownApiKeyError(correlation_id, api_key)
    low, high = SUPPORTED_VERSIONS[key]
    if not low <= api_version <= high:
        raise UnsupportedVersionError(correlation_id, api_key, api_version)
    try:
        REQUEST_SCHEMAS[key, api_version].check(body)
    except SchemaError as exc:
        raise InvalidRequestError(correlation_id, f"{key.name}: {exc}", api_key) from None
    # tuple.__new__: the NamedTuple's own __new__ is Python code, run for every request.
    return new_tuple(RequestHeader, (key, api_version, correlation_id, client_id)), body


def encode_response(correlation_id: int, body: dict, *, api_key: int | None = None,
                    api_version: int = 0) -> bytes:
    """Return a complete response frame. With ``api_key`` the body is validated first.

    Raises:
        LocalProtocolError: the body fails validation or cannot be packed.
    """
    if api_key is not None:
        try:
            check_response_body(api_key, api_version, body)
        except InvalidResponseError as exc:
            raise LocalProtocolError(str(exc)) from None
    try:
        payload = pack([correlation_id, body])
    except (TypeError, ValueError, OverflowError) as exc:
        raise LocalProtocolError(f"response body cannot be packed: {exc}") from None
    return encode_frame(payload)


def split_response(frame_body, *, record_views: bool = False) -> tuple[int, dict]:
    """Unpack a response envelope without checking the body (the connection matches ids first).

    ``record_views``: large bins (records) come back as memoryviews of ``frame_body`` instead of
    copies (``msgpack_views.py`` says when that pays); keep ``frame_body`` unmodified while
    the body is in use.

    Raises:
        InvalidResponseError: not msgpack, or not ``[int, map]``.
    """
    try:
        message = unpack_with_views(frame_body) if record_views else _unpack(frame_body)
    except Exception as exc:
        raise InvalidResponseError(f"response is not msgpack: {type(exc).__name__}") from None
    if (type(message) is not list or len(message) != 2 or not _is_int(message[0])
            or type(message[1]) is not dict):
        raise InvalidResponseError("response is not a [correlation_id, map] array")
    return message[0], message[1]


def check_response_body(api_key: int, api_version: int, body: dict) -> None:
    """Validate a response body: the API's schema, or a top-level error body.

    Raises:
        InvalidResponseError: it is neither.
    """
    schema = RESPONSE_SCHEMAS.get((api_key, api_version))
    try:
        if schema is None:  # e.g. the answer to a version we do not speak: only an error fits
            raise SchemaError(f"no schema for api key {api_key} version {api_version}")
        schema.check(body)
        return
    except SchemaError as exc:
        problem = exc
    if "error_code" in body:
        try:
            ERROR_BODY_SCHEMA.check(body)
            if body["error_code"] != ErrorCode.NONE:
                return
        except SchemaError:
            pass
        if api_key == ApiKey.API_VERSIONS:  # error body that also lists api_keys
            return _check_api_versions_error(body, problem)
    name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else api_key
    raise InvalidResponseError(f"{name} response: {problem}")


_API_VERSIONS_ERROR = Struct(
    {**RESPONSE_SCHEMAS[ApiKey.API_VERSIONS, 0].fields, "error_message": NULLABLE_STR},
    optional=frozenset({"error_message", "api_keys"}),
)


def _check_api_versions_error(body: dict, problem: SchemaError) -> None:
    try:
        _API_VERSIONS_ERROR.check(body)
    except SchemaError:
        raise InvalidResponseError(f"API_VERSIONS response: {problem}") from None


def decode_response(frame_body, api_key: int, api_version: int = 0, *,
                    record_views: bool = False) -> tuple[int, dict]:
    """Parse a response frame body and validate it for the request it answers.

    ``record_views``: as in ``split_response``.

    Returns:
        (correlation_id, body). The body may be a top-level error body for any API.

    Raises:
        InvalidResponseError: garbage, a bad envelope, or a body matching neither the API's
            schema nor the error body.
    """
    correlation_id, body = split_response(frame_body, record_views=record_views)
    try:
        check_response_body(api_key, api_version, body)
    except InvalidResponseError as exc:
        exc.correlation_id = correlation_id
        raise
    return correlation_id, body
