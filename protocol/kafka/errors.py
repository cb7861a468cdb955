"""The typed errors of the Kafka codec.

Why these and not ``struct.error``/``IndexError``: the broker must decide what to answer from
the exception alone. An unknown API key or version is answered (UNSUPPORTED_VERSION, and the
codec still knows the correlation id), malformed bytes close the connection after logging,
and a batch with a codec this install cannot read is answered UNSUPPORTED_COMPRESSION_TYPE for
that partition only. All derive from tslog's own ``RemoteProtocolError``/``BatchFormatError``
so code that already catches those keeps working.
"""

from __future__ import annotations

from ..errors import BatchFormatError, ErrorCode, RemoteProtocolError


class KafkaDecodeError(RemoteProtocolError):
    """The peer's bytes are not a valid Kafka message of the API and version they claim."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg, ErrorCode.INVALID_REQUEST)


class UnsupportedKafkaVersion(RemoteProtocolError):
    """The request names an API key or version this codec does not serve.

    The header's fixed part (api key, version, correlation id, client id) is always readable,
    so the broker can still answer with UNSUPPORTED_VERSION to the right correlation id.
    """

    def __init__(self, api_key: int, api_version: int, correlation_id: int | None,
                 client_id: str | None = None) -> None:
        super().__init__(f"Kafka api key {api_key} version {api_version} is not supported",
                         ErrorCode.UNSUPPORTED_VERSION)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id


class KafkaBatchError(BatchFormatError):
    """A Kafka RecordBatch v2 that fails its length, magic, CRC or record checks."""


class UnsupportedCompression(KafkaBatchError):
    """A batch compressed with a codec that is unknown or whose library is not installed."""

    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
