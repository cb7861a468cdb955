"""One connection's protocol state without I/O: bytes in, events out; answers in, bytes out.

The shape is h11's: the owner hands received bytes to ``receive_data`` (or lets the socket
write straight into ``get_buffer()`` and reports ``buffer_updated``), takes ``next_event()``
until it says ``NEED_DATA``, and writes whatever ``send_request`` / ``data_to_send`` return.
Everything the wire demands lives here once (framing with the size cap checked before a byte
of the body is buffered, correlation ids, answers in request order, envelope and schema
checks), so the asyncio server, the asyncio client, a follower and the blocking socket are
thin shells that only move bytes and decide *when*.

Receiving without copies (``frames.FrameReceiver``): small frames arrive many per ``recv`` in
a reused scratch buffer, a large frame gets a buffer of exactly its size, so the bytes of a
Produce request's or a Fetch response's records are copied at most once in user space, and
with ``record_views`` msgpack leaves them in that buffer (``msgpack_views.py``).

Server role: each request that wants an answer gets a sequence number in arrival order;
handlers may finish in any order (``answer``), and ``data_to_send`` releases answers only
from the head of that order, as Kafka's pipelining requires. ``held_bytes`` counts answers
waiting behind an unanswered request, for the owner's memory limits.

Client role: ``send_request`` numbers requests; each response must answer the oldest
outstanding request (the broker answers in order), else the stream is out of step and
``next_event`` raises ``RemoteProtocolError``: the connection is unusable.
"""

from __future__ import annotations

import collections
import enum
from typing import NamedTuple

from .chunked import encode_request_chunks
from .errors import ErrorCode, LocalProtocolError, RemoteProtocolError
from .foreign import is_kafka_refusal
from .frames import FRAME_PREFIX_SIZE, MAX_FRAME_BYTES, SCRATCH_BYTES, FrameReceiver
from .messages import (
    API_KEYS as _API_KEYS,
    new_tuple as _new_tuple,
    CORRELATION_ID_MAX,
    ApiKey,
    InvalidResponseError,
    KafkaAnswerError,
    RequestError,
    RequestHeader,
    check_request,
    check_response_body,
    encode_request,
    split_response,
)
from .server_codec import NATIVE_CODEC
# ``record_views`` applies only to frames of at least this many bytes. The view walk
# (``msgpack_views.py``) has a fixed cost whatever the size, where msgpack's C decoder
# costs less up front plus a copy of the records that grows with them; the break-even,
# measured here, lies a little below this threshold. Below it copying is cheaper.
VIEWS_FROM_BYTES = 512 * 1024


class Role(enum.Enum):
    CLIENT = "client"
    SERVER = "server"


class NeedData(enum.Enum):
    NEED_DATA = "need data"


NEED_DATA = NeedData.NEED_DATA


class Request(NamedTuple):
    """A valid request. ``sequence`` is what ``answer`` takes; None when no answer is owed
    (a Produce with acks = 0)."""

    sequence: int | None
    header: RequestHeader
    body: dict


class Refused(NamedTuple):
    """A framed, enveloped request that cannot be served (unknown API, unsupported version,
    schema violation). It has been answered with its typed error already; the owner only
    logs or counts it."""

    sequence: int
    error: RequestError


class Response(NamedTuple):
    correlation_id: int
    api_key: ApiKey
    body: dict


class BadResponse(NamedTuple):
    """A response, in step, whose body fits neither its API's schema nor an error body: that
    request failed; the connection itself is fine."""

    correlation_id: int
    api_key: ApiKey
    error: InvalidResponseError


class ConnectionClosed(NamedTuple):
    """The peer closed its side. ``unfinished_bytes``: bytes of a frame it never finished."""

    unfinished_bytes: int


# ------------------------------------------------------------------------------ connection


# A server-side answer slot, in request order: [request header, frame buffers or None, size].
# A list, not an object: one is made per request, and a list costs no Python-level __init__.
_HEADER, _FRAME, _SIZE = 0, 1, 2
_PRODUCE = ApiKey.PRODUCE  # read per request (see ApiKey)
_PRODUCE_KEY = int(_PRODUCE)  # both codecs' Produce: the native ApiKey and Kafka's int
_FETCH_KEY = int(ApiKey.FETCH)


class Connection:
    """The protocol state of one connection, for either end (module docstring).

    Args:
        role: ``Role.SERVER`` reads requests and answers them; ``Role.CLIENT`` sends requests
            and reads their responses.
        client_id: put in every request header (client role).
        record_views: large ``records`` values of received messages are memoryviews of the
            frame's buffer, not copies (keep them only as long as needed).
        views_from: the smallest frame whose records are left in place (default
            ``VIEWS_FROM_BYTES``, where views start to pay; never below what the scratch
            buffer holds, since those frames were copied out of it anyway).
        allocate: ``allocate(size)`` makes the buffer of one frame too large for the scratch.
        scratch_bytes: the reused receive buffer (``frames.FrameReceiver``): frames up to its
            size arrive many per read and are copied out; larger ones get their own buffer.
        codec: the server role's wire format (``server_codec.py``): tslog's own by default,
            or Kafka's (``kafka/server_codec.py``); the client role speaks tslog's.
    """

    def __init__(self, role: Role, *, max_frame_bytes: int = MAX_FRAME_BYTES,
                 client_id: str | None = None, record_views: bool = False,
                 views_from: int = VIEWS_FROM_BYTES, allocate=bytearray,
                 scratch_bytes: int = SCRATCH_BYTES, codec=NATIVE_CODEC) -> None:
        self._server = role is Role.SERVER
        # The codec's parts, bound once: each is called once per request.
        self._decode, self._encode = codec.decode, codec.encode
        self._refusals, self._codec = codec.refusals, codec
        self.client_id = client_id
        # Frames of this size and more get views (at least those received in place).
        # Infinite without record views: one comparison per frame decides either way.
        self._views_from = (max(views_from, scratch_bytes - FRAME_PREFIX_SIZE + 1)
                            if record_views else float("inf"))
        self.receiver = FrameReceiver(max_frame_bytes, allocate=allocate,
                                      scratch_bytes=scratch_bytes)
        # ``get_buffer()`` (where the socket writes next) and ``buffer_updated(n)`` (n bytes
        # were written there) are the receiver's own: bound here, no call in between, as
        # they run for every read.
        self.get_buffer = self.receiver.get_buffer
        self.buffer_updated = self.receiver.buffer_updated
        self._frames = self.receiver.frames  # the same deque for the receiver's life
        self._peer_closed = False
        self._correlation_id = 0
        self._outstanding: collections.deque = collections.deque()  # client: (id, key, ver)
        self._next_sequence = 0
        self._answers: collections.deque[list] = collections.deque()  # server, in order
        self._first_sequence = 0  # sequence number of ``_answers[0]``
        self.held_bytes = 0  # server: answered, waiting behind an unanswered request
        # Server: requests read and owed an answer not yet handed to ``data_to_send``. A
        # counter, not a property over ``_answers``: the owner reads it a few times for every
        # request to decide whether it may take the next one.
        self.unanswered = 0

    # -- receiving -------------------------------------------------------------------------

    def receive_data(self, data) -> None:
        """Received bytes; ``b""`` means the peer closed its side."""
        if not data:
            self._peer_closed = True
            return
        self.receiver.receive_data(data)

    @property
    def frames_waiting(self) -> int:
        """Whole frames received whose events ``next_event`` has not returned yet."""
        return len(self._frames)

    def drop_unread(self) -> None:
        """Forget received requests not yet returned by ``next_event`` (a server shutting
        down: as if they had never been read)."""
        self.receiver.drop_frames()

    def next_event(self):
        """The next ``Request``/``Refused`` (server), ``Response`` (client), ``NEED_DATA``, or
        ``ConnectionClosed`` once the peer closed and every whole frame was handed out.

        Raises:
            RemoteProtocolError: the peer broke the protocol (an oversized or malformed frame,
                a response that answers no outstanding request); close the connection.
        """
        frames = self._frames
        frame = frames.popleft() if frames else self.receiver.next_frame()
        if frame is None:
            if self._peer_closed:
                return ConnectionClosed(self.receiver.buffered_bytes)
            return NEED_DATA
        if not self._server:
            return self._response_event(frame)
        # A request: the per-request path of every server, so no call below this one but
        # the decoding (a request costs a few microseconds in all; each Python call shows).
        try:
            header, body = self._decode(frame, record_views=len(frame) >= self._views_from)
        except self._refusals as exc:
            return self._refuse(exc)
        if header.api_key == _PRODUCE_KEY and body["acks"] == 0:
            return _new_tuple(Request, (None, header, body))
        # ``_expect_answer``, inline:
        self._answers.append([header, None, 0])
        self.unanswered += 1
        sequence = self._next_sequence
        self._next_sequence = sequence + 1
        return _new_tuple(Request, (sequence, header, body))

    # -- server ----------------------------------------------------------------------------

    def _refuse(self, exc: RequestError) -> Refused:
        """A request the core answers itself with its typed error (``Refused``)."""
        sequence = self._expect_answer(None)
        self._settle(self._answers[-1], self._codec.refusal(exc))
        return Refused(sequence, exc)

    def _expect_answer(self, header) -> int:
        self._answers.append([header, None, 0])
        self.unanswered += 1
        sequence = self._next_sequence
        self._next_sequence += 1
        return sequence

    def answer(self, sequence: int, body: dict, *, chunked: bool = False) -> None:
        """The answer to request ``sequence``; sent once every earlier request is answered.

        ``chunked``: the body is a Fetch response whose records are written from their own
        buffers (``chunked.py``), not copied into the frame.

        Raises:
            LocalProtocolError: the body cannot be encoded; the request is answered with the
                codec's server error instead (nothing, when its format has none: the owner
                closes the connection), and the error is raised for the owner to log.
        """
        index = sequence - self._first_sequence
        answers = self._answers
        if not 0 <= index < len(answers) or answers[index][_FRAME] is not None:
            raise LocalProtocolError(f"request {sequence} is not awaiting an answer")
        slot = answers[index]
        try:
            frame = self._encode(slot[_HEADER], body, chunked)
        except LocalProtocolError:
            self._settle(slot, self._codec.server_error(slot[_HEADER]) or [])
            raise
        # ``_settle``, inline (once per request):
        slot[_FRAME] = frame
        slot[_SIZE] = size = len(frame[0]) if len(frame) == 1 else sum(map(len, frame))
        self.held_bytes += size

    def _settle(self, slot: list, frame: list) -> None:
        slot[_FRAME] = frame
        slot[_SIZE] = size = sum(map(len, frame))
        self.held_bytes += size

    def data_to_send(self) -> list:
        """The buffers of every answer now due, in request order (``[]`` if none)."""
        answers = self._answers
        if len(answers) == 1 and answers[0][_FRAME] is not None:  # the usual: one in flight
            _, out, size = answers.popleft()
            self._first_sequence += 1
            self.unanswered -= 1
            self.held_bytes -= size
            return out
        out: list = []
        while answers and answers[0][_FRAME] is not None:
            _, frame, size = answers.popleft()
            self._first_sequence += 1
            self.unanswered -= 1
            out += frame
            self.held_bytes -= size
        return out


    # -- client ----------------------------------------------------------------------------

    def send_request(self, api_key: int, body: dict, *, api_version: int = 0,
                     validate: bool = True) -> tuple[int, list]:
        """Encode a request; returns (correlation id, buffers to write, in order).

        A Produce request's batches are buffers of their own (``chunked.py``), not copied into
        the frame. A Produce with acks = 0 expects no response.

        Raises:
            LocalProtocolError: ``validate`` and the body breaks its schema.
        """
        self._correlation_id = correlation_id = (self._correlation_id + 1) % (
            CORRELATION_ID_MAX + 1)
        header = _new_tuple(RequestHeader, (api_key, api_version, correlation_id, self.client_id))
        if api_key == _PRODUCE:
            if validate:
                check_request(header, body)
            frame = encode_request_chunks(header, body)
            if body.get("acks") == 0:
                return correlation_id, frame
        else:
            frame = [encode_request(header, body, validate=validate)]
        self._outstanding.append((correlation_id, api_key, api_version))
        return correlation_id, frame

    @property
    def outstanding(self) -> int:
        """Requests sent whose response has not been read yet."""
        return len(self._outstanding)

    def _response_event(self, frame) -> Response | BadResponse:
        if not self._outstanding:
            raise RemoteProtocolError("a response arrived with no request outstanding",
                                      ErrorCode.INVALID_REQUEST)
        correlation_id, api_key, api_version = self._outstanding.popleft()
        try:
            # only a Fetch answer carries records (see ``decode_request``)
            got, body = split_response(frame, record_views=api_key == _FETCH_KEY
                                       and len(frame) >= self._views_from)
        except InvalidResponseError:
            if is_kafka_refusal(frame):
                raise KafkaAnswerError("answered in Kafka's wire protocol") from None
            raise
        if got != correlation_id:  # first: its body would be checked against the wrong API
            raise RemoteProtocolError(f"response {got} does not answer request "
                                      f"{correlation_id}", ErrorCode.INVALID_REQUEST)
        key = _API_KEYS.get(api_key)  # a dict lookup: ApiKey(n) costs a microsecond here
        if key is None:
            key = ApiKey(api_key)  # no such API: ValueError, as before the lookup
        try:
            check_response_body(api_key, api_version, body)
        except InvalidResponseError as exc:
            return BadResponse(correlation_id, key, exc)
        return _new_tuple(Response, (correlation_id, key, body))
