"""Kafka's wire format for the server connection core (``protocol/server_codec.py`` says what
a codec is).

Kafka frames a message exactly as tslog does (a 4-byte big-endian size, then the message), so
the core's framing and size cap serve both; this codec decodes a frame with the schema codec
(``codec.py``) and encodes the answer for the request's version.

Refusals: an API or version outside ``advertised`` (what the listener's ApiVersions says) is
answered UNSUPPORTED_VERSION and the connection goes on: ApiVersions in its v0 shape, which
every client reads, as Kafka does; any other API with a response header and the int16 error
code, the shape its v0 answer starts with. A request whose correlation id cannot be read has
no answer: the connection closes. Kafka responses have no generic error shape, so an answer
that cannot be encoded closes the connection too (``server_error`` is None).
"""

from __future__ import annotations

import struct

from ..errors import ErrorCode, LocalProtocolError
from ..frames import frame_prefix
from .codec import API_VERSIONS, KafkaRequest, decode_request, encode_response, \
    encode_response_chunks
from .errors import KafkaDecodeError, UnsupportedKafkaVersion

_UNSUPPORTED = int(ErrorCode.UNSUPPORTED_VERSION)
_HEADER_AND_ERROR = struct.Struct(">ih")  # response header v0 + an int16 error code


class KafkaCodec:
    """Args:
        advertised: api key -> (lowest, highest) version the listener serves.
        unsupported_api_versions: the ApiVersions v0 body that answers an unserved version
            (UNSUPPORTED_VERSION, with the versions the client may pick from).
    """

    refusals = (UnsupportedKafkaVersion,)

    def __init__(self, advertised: dict[int, tuple[int, int]],
                 unsupported_api_versions: dict) -> None:
        self.advertised = advertised
        self._unsupported_api_versions = unsupported_api_versions

    def decode(self, frame, record_views: bool = False) -> tuple[KafkaRequest, dict]:
        """(the request, its body); the request is the header (``api_key``, ``api_version``,
        ``correlation_id``, ``client_id``, ``api_name``)."""
        try:
            request = decode_request(frame)
        except UnsupportedKafkaVersion as exc:
            if exc.correlation_id is None:
                raise KafkaDecodeError(str(exc)) from None
            raise
        low, high = self.advertised.get(request.api_key, (1, 0))
        if not low <= request.api_version <= high:
            raise UnsupportedKafkaVersion(request.api_key, request.api_version,
                                          request.correlation_id, request.client_id)
        return request, request.body

    @staticmethod
    def encode(header: KafkaRequest, body: dict, chunked: bool) -> list:
        try:
            chunks = encode_response_chunks(header.api_key, header.api_version,
                                            header.correlation_id, body)
        except Exception as exc:  # a body its version cannot hold: the adapter's bug
            raise LocalProtocolError(f"the Kafka response to api {header.api_key} "
                                     f"v{header.api_version} cannot be encoded: {exc!r}") from exc
        return [frame_prefix(sum(map(len, chunks))), *chunks]

    def refusal(self, exc: UnsupportedKafkaVersion) -> list:
        if exc.api_key == API_VERSIONS:
            data = encode_response(API_VERSIONS, 0, exc.correlation_id,
                                   self._unsupported_api_versions)
        else:
            data = _HEADER_AND_ERROR.pack(exc.correlation_id, _UNSUPPORTED)
        return [frame_prefix(len(data)), data]

    @staticmethod
    def server_error(header) -> None:
        return None
