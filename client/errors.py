"""The client's exceptions: one class per wire ``ErrorCode``, plus local failures.

Why a class per code: callers write ``except NotLeaderOrFollowerError`` instead of comparing
numbers, and the retry logic reads two class flags instead of a second table: ``retriable``
(the same request may succeed later; from ``ErrorCode.retriable``) and ``invalid_metadata``
(refresh the cluster metadata before retrying, the leader has probably moved). Classes are
generated from ``ErrorCode`` so a new code can never be forgotten here; a number this client
does not know becomes ``UnknownServerError``, the same reading ``ErrorCode.from_wire`` gives.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode


class TslogError(Exception):
    """Base of every client error. ``error_code`` is the wire code (or the closest one)."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: bool = False
    invalid_metadata: bool = False
    # The broker's own words on this refusal, when it sent any (e.g. Produce's error_message:
    # a batch's size and the topic's limit), for callers that word their own messages.
    broker_message: str | None = None

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.error_code.message)


_INVALID_METADATA = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.NETWORK_EXCEPTION,
}

# Names that would read badly if derived mechanically from the enum member name.
_CLASS_NAMES = {
    ErrorCode.NETWORK_EXCEPTION: "ConnectionLostError",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "InvalidTopicError",
    ErrorCode.KAFKA_STORAGE_ERROR: "StorageError",
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerError",
}


def _class_name(code: ErrorCode) -> str:
    if code in _CLASS_NAMES:
        return _CLASS_NAMES[code]
    return "".join(part.capitalize() for part in code.name.split("_")) + "Error"


_BY_CODE: dict[int, type[TslogError]] = {}
for _code in ErrorCode:
    if _code is ErrorCode.NONE:
        continue
    _cls = type(_class_name(_code), (TslogError,), {
        "__doc__": _code.message,
        "__module__": __name__,
        "error_code": _code,
        "retriable": _code.retriable,
        "invalid_metadata": _code in _INVALID_METADATA,
    })
    _BY_CODE[int(_code)] = _cls
    globals()[_cls.__name__] = _cls
del _code, _cls

# Re-bound explicitly so readers (and linters) see the names the client code uses.
UnknownServerError: type[TslogError] = _BY_CODE[ErrorCode.UNKNOWN_SERVER_ERROR]
ConnectionLostError: type[TslogError] = _BY_CODE[ErrorCode.NETWORK_EXCEPTION]
RequestTimedOutError: type[TslogError] = _BY_CODE[ErrorCode.REQUEST_TIMED_OUT]
UnknownTopicOrPartitionError: type[TslogError] = _BY_CODE[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
NotLeaderOrFollowerError: type[TslogError] = _BY_CODE[ErrorCode.NOT_LEADER_OR_FOLLOWER]
OffsetOutOfRangeError: type[TslogError] = _BY_CODE[ErrorCode.OFFSET_OUT_OF_RANGE]
TopicAlreadyExistsError: type[TslogError] = _BY_CODE[ErrorCode.TOPIC_ALREADY_EXISTS]
InvalidRequestError: type[TslogError] = _BY_CODE[ErrorCode.INVALID_REQUEST]
# A broker connection limit refused the connection; the message names the limit. Not
# retriable: raised to the caller (``Consumer.poll``, a send's future, Admin calls, the CLI)
# at once rather than retried in silence.
TooManyConnectionsError: type[TslogError] = _BY_CODE[ErrorCode.TOO_MANY_CONNECTIONS]


# What a too-large request's error adds: the setting to raise, and the broker's limit on a
# request, which must allow it too (the broker closes the connection on a larger frame).
REQUEST_SIZE_HINT = (": raise the producer's max_request_size (Kafka's max.request.size; the "
                     "CLI's --producer-property max.request.size=N), with the broker's "
                     "max_frame_bytes at least as large")


class ClientClosedError(TslogError):
    """The producer, consumer or admin was closed; nothing more can be sent through it."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "the client is closed")


class BufferFullError(TslogError):
    """The producer's buffer stayed full for ``max_block_ms``; the record was not queued."""

    retriable = True

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "the producer buffer is full")


class DeliveryTimeoutError(RequestTimedOutError):
    """A produced batch got no acknowledgement within ``delivery_timeout_ms`` of its first
    record's ``send``. If it was in flight it may still have been written (at-least-once)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "not acknowledged within delivery_timeout_ms")


class FlushTimeoutError(RequestTimedOutError):
    """``Producer.flush(timeout_ms)`` ran out of time before every record it waited for had
    its outcome (kafka-python's ``flush`` raises the same way). Nothing is cancelled: those
    records are still being sent, and each one's future reports what happened to it."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "flush: not every record acknowledged within timeout_ms")


class TlsError(ConnectionLostError):
    """The TLS handshake with a broker failed (its certificate is not trusted, it does not
    speak TLS, or it refused this client's certificate). Not retriable: the same settings
    fail the same way, so the client says so at once instead of retrying in silence."""

    retriable = False
    invalid_metadata = False


class SecurityRequiredError(ConnectionLostError):
    """A broker closed a plain connection before answering its first request: the sign of
    a TLS listener or one that requires a SASL login. ``address`` is "host:port", so a
    program (the CLI) can say in its own words what to configure."""

    def __init__(self, message: str | None = None, address: str = "") -> None:
        super().__init__(message)
        self.address = address


class WrongProtocolError(ConnectionLostError):
    """The address answered in Kafka's wire protocol: a broker's Kafka listener, not tslog's
    own port. Not retriable: every attempt gets the same answer."""

    retriable = False
    invalid_metadata = False


class InvalidResponseError(TslogError):
    """A broker answered with bytes that do not match the protocol (a broker bug)."""


def error_for(code: int) -> type[TslogError]:
    """The exception class for a wire error code; unknown codes give ``UnknownServerError``."""
    return _BY_CODE.get(code, UnknownServerError)


def refused(code: int, what: str) -> TslogError:
    """The error for ``code``, its message naming what was refused, why, and the code, so a
    denial reads as one: ``delete topic 'ta': not authorized to access this topic
    (TOPIC_AUTHORIZATION_FAILED)``."""
    cls = error_for(code)
    reason = cls.error_code.message.rstrip(".")
    return cls(f"{what}: {reason[:1].lower()}{reason[1:]} ({cls.error_code.name})")


def raise_for(code: int, message: str | None = None) -> None:
    """Raise the exception for ``code`` unless it is NONE (0)."""
    if code:
        raise error_for(code)(message)


__all__ = (["TslogError", "ClientClosedError", "BufferFullError", "DeliveryTimeoutError",
            "FlushTimeoutError",
            "InvalidResponseError", "SecurityRequiredError", "TlsError",
            "WrongProtocolError", "error_for", "raise_for", "refused"]
           + sorted(cls.__name__ for cls in _BY_CODE.values()))
