"""What a server connection needs of a wire format: the native one here, Kafka's in
``kafka/server_codec.py``.

The connection core (``connection.Connection`` in the server role) owns everything that moves
an exchange's state: frames, the order of answers, what is owed and held. A codec only
translates: a frame into a request header and body, an answer body into the buffers of its
frame, and a request it must refuse (an API or version it does not serve) into the typed
answer the client expects. So both listeners share one core and one asyncio shell, and every
limit of the core applies to both by construction.

A codec has:
    ``refusals``: the exception types ``decode`` raises for a well-framed request that gets a
        typed answer and keeps the connection; each has ``correlation_id``.
    ``decode(frame, record_views=...)`` -> (header, body): the header has ``api_key``,
        ``api_version``, ``correlation_id`` and ``client_id``. Anything but a refusal that it
        raises is a ``RemoteProtocolError``: the connection closes.
    ``encode(header, body, chunked)`` -> the frame's buffers (prefix included); raises
        ``LocalProtocolError`` when the body cannot be encoded.
    ``refusal(exc)`` -> the refused request's frame buffers.
    ``server_error(header)`` -> the frame to answer with when ``encode`` failed, or None when
        the format has no generic error shape (the owner closes the connection then).
"""

from __future__ import annotations

from .chunked import encode_response_chunks
from .errors import ErrorCode
from .messages import RequestError, decode_request, encode_response
from .packed import PackedAnswer, response_frame

_SERVER_ERROR = {"error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR)}


class NativeCodec:
    """tslog's msgpack frames (``messages.py``): a refused request is answered with its
    typed error body; an answer that cannot be encoded, with UNKNOWN_SERVER_ERROR."""

    refusals = (RequestError,)
    decode = staticmethod(decode_request)

    @staticmethod
    def encode(header, body: dict, chunked: bool) -> list:
        if type(body) is PackedAnswer:  # packed ahead (``packed.py``): sent as it is
            return response_frame(header.correlation_id, body)
        if chunked:  # a Fetch's records go out from their own buffers (``chunked.py``)
            return encode_response_chunks(header.correlation_id, body)
        return [encode_response(header.correlation_id, body)]

    @staticmethod
    def refusal(exc: RequestError) -> list:
        return [encode_response(exc.correlation_id, exc.response_body())]

    @staticmethod
    def server_error(header) -> list:
        return [encode_response(header.correlation_id, _SERVER_ERROR)]


NATIVE_CODEC = NativeCodec()
