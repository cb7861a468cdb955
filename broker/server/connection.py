"""One client connection: frames in, handlers run, responses out in request order.

Theory of operation: ``data_received`` feeds the bytes to a ``FrameDecoder`` and handles each
whole frame at once. A request gets a slot in ``_pending`` (a deque in request order). Fast
handlers return a body and the slot is filled immediately; slow ones (durable produce, long
poll, offset commit) return an awaitable that runs as a task and fills its slot when done.
After every event the filled slots at the head of the deque are written, so responses go out
in request order however the handlers finish (pipelining).

Limits: the frame cap (a bigger length prefix closes the connection before any of the body is
read), at most ``max_in_flight_requests`` unanswered requests (reading pauses beyond that, and
while the transport's write buffer is full, so a client that never reads cannot grow our
memory), and an idle timer. Bad input costs the client its request or its connection, and
the broker one log line; never a traceback on the wire.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from tslog.protocol.chunked import encode_response_chunks
from tslog.protocol.errors import ErrorCode, LocalProtocolError
from tslog.protocol.frames import FrameDecoder, FrameTooLargeError
from tslog.protocol.messages import (
    ApiKey,
    InvalidRequestError,
    MalformedRequestError,
    RequestError,
    UnknownApiKeyError,
    decode_request,
    encode_response,
)

from ..metrics.definitions import OPEN_CONNECTIONS, REFUSED, api_metrics
from ..metrics.observe import finish_request
from .handlers import HANDLERS
from .state import Broker

log = logging.getLogger("tslog.broker.connection")

_SERVER_ERROR = {"error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR)}


class _Slot:
    __slots__ = ("correlation_id", "frame", "task", "chunked", "api", "started")

    def __init__(self, correlation_id: int, frame: list | None = None,
                 chunked: bool = False) -> None:
        self.correlation_id = correlation_id
        self.frame = frame  # the encoded response (a list of buffers), once known
        self.task: asyncio.Task | None = None
        self.chunked = chunked  # a Fetch: records are written from their own buffers
        self.api = None  # the request's ApiMetrics, while a task answers it
        self.started = 0.0


def _refusal_reason(exc: RequestError) -> str:
    if isinstance(exc, UnknownApiKeyError):
        return "unknown_api"
    if isinstance(exc, InvalidRequestError):
        return "invalid_request"
    return "unsupported_version"


def _encode(correlation_id: int, body: dict, chunked: bool = False) -> list:
    """The response frame as buffers for ``writelines``; a Fetch's records are not copied."""
    try:
        if chunked:
            return encode_response_chunks(correlation_id, body)
        return [encode_response(correlation_id, body)]
    except LocalProtocolError:
        log.exception("response to correlation id %d cannot be encoded", correlation_id)
        return [encode_response(correlation_id, _SERVER_ERROR)]


class ConnectionRegistry:
    """The live connections: enforces ``max_connections`` and drains them at shutdown."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self.connections: set[BrokerConnection] = set()
        self.refused = 0

    def admit(self, connection: BrokerConnection) -> bool:
        if len(self.connections) >= self.max_connections:
            self.refused += 1
            REFUSED["too_many_connections"].inc()
            return False
        self.connections.add(connection)
        OPEN_CONNECTIONS.inc()
        return True

    def release(self, connection: BrokerConnection) -> None:
        if connection in self.connections:
            self.connections.remove(connection)
            OPEN_CONNECTIONS.dec()

    async def drain(self, grace_s: float) -> None:
        """Stop reading everywhere, let in-flight requests finish for ``grace_s``, then close."""
        connections = list(self.connections)
        for connection in connections:
            connection.begin_shutdown()
        waits = [connection.closed for connection in connections]
        if waits:
            await asyncio.wait(waits, timeout=grace_s)
            for connection in connections:
                if not connection.closed.done():
                    log.warning("%s: in-flight requests still running after the grace "
                                "period; closing", connection.peer)
                    connection.abort()


class BrokerConnection(asyncio.Protocol):
    def __init__(self, broker: Broker, registry: ConnectionRegistry) -> None:
        self.broker = broker
        self.registry = registry
        config = broker.config
        self.max_in_flight = config.max_in_flight_requests
        self.idle_s = config.connections_max_idle_ms / 1000
        self._decoder = FrameDecoder(config.max_frame_bytes)
        self._pending: collections.deque[_Slot] = collections.deque()
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future = self._loop.create_future()
        self.peer = "?"
        self._closing = False
        self._shutting_down = False
        self._read_paused = False
        self._write_paused = False
        self._last_activity = 0.0
        self._idle_handle: asyncio.TimerHandle | None = None

    # -- transport callbacks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if not self.registry.admit(self):
            log.warning("%s: refused, %d connections already open", self.peer,
                        self.registry.max_connections)
            self._closing = True
            transport.abort()
            return
        self._last_activity = self._loop.time()
        self._idle_handle = self._loop.call_later(self.idle_s, self._check_idle)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        started = time.perf_counter()
        self._last_activity = self._loop.time()
        try:
            frames = self._decoder.feed(data)
        except FrameTooLargeError as exc:
            REFUSED["oversize_frame"].inc()
            self._close_bad(str(exc))
            return
        for frame in frames:
            if self._closing:
                return
            self._handle_frame(frame)
        self._write_ready()
        self.broker.idle_poller.handled(self._loop, started)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self.registry.release(self)
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        if self._decoder.buffered_bytes:
            log.warning("%s: disconnected inside a frame; dropped %d bytes of it", self.peer,
                        self._decoder.buffered_bytes)
        for slot in self._pending:
            if slot.task is not None:
                slot.task.cancel()
        self._pending.clear()
        if not self.closed.done():
            self.closed.set_result(None)

    def eof_received(self) -> bool | None:
        """The client half-closed: answer what it already sent, then close our side."""
        if self._pending and not self._closing:
            self._shutting_down = True
            return True  # keep the transport open for the responses still owed
        return None  # nothing owed: let the transport close

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    # -- requests --------------------------------------------------------------------------

    def _handle_frame(self, frame: bytes) -> None:
        try:
            header, body = decode_request(frame)
        except MalformedRequestError as exc:
            REFUSED["bad_frame"].inc()
            self._close_bad(str(exc))
            return
        except RequestError as exc:
            REFUSED[_refusal_reason(exc)].inc()
            log.warning("%s: refused request %d: %s", self.peer, exc.correlation_id, exc)
            self._pending.append(_Slot(exc.correlation_id,
                                       _encode(exc.correlation_id, exc.response_body())))
            return
        started = time.perf_counter()
        try:
            result = HANDLERS[header.api_key](self.broker, body)
        except Exception:
            log.exception("%s: %s handler failed", self.peer, header.api_key.name)
            result = _SERVER_ERROR
        if result is None:  # Produce with acks = 0: no response at all
            finish_request(api_metrics(header.api_key, body), None, started)
            return
        slot = _Slot(header.correlation_id, chunked=header.api_key == ApiKey.FETCH)
        if type(result) is dict:
            slot.frame = _encode(header.correlation_id, result, slot.chunked)
            finish_request(api_metrics(header.api_key, body), result, started)
        else:
            slot.api = api_metrics(header.api_key, body)
            slot.started = started
            slot.task = self._loop.create_task(result)
            slot.task.add_done_callback(lambda task, slot=slot: self._on_done(slot, task))
        self._pending.append(slot)
        self._update_reading()

    def _on_done(self, slot: _Slot, task: asyncio.Task) -> None:
        if self._closing or task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("%s: handler failed", self.peer, exc_info=error)
            body = _SERVER_ERROR
        else:
            body = task.result()
        slot.frame = _encode(slot.correlation_id, body, slot.chunked)
        finish_request(slot.api, body, slot.started)
        self._write_ready()

    def _write_ready(self) -> None:
        """Write the answered requests at the head of the queue, in order."""
        pending = self._pending
        frames = []
        while pending and pending[0].frame is not None:
            frames += pending.popleft().frame
        if frames and not self._closing:
            self._transport.writelines(frames)
        if self._shutting_down and not pending:
            self._close()
        else:
            self._update_reading()

    def _update_reading(self) -> None:
        if self._closing or self._shutting_down:
            return
        should_pause = self._write_paused or len(self._pending) >= self.max_in_flight
        if should_pause and not self._read_paused:
            self._read_paused = True
            self._transport.pause_reading()
        elif not should_pause and self._read_paused:
            self._read_paused = False
            self._transport.resume_reading()

    # -- closing ---------------------------------------------------------------------------

    def _check_idle(self) -> None:
        if self._closing:
            return
        now = self._loop.time()
        idle_for = now - self._last_activity
        if idle_for >= self.idle_s and not self._pending:
            log.warning("%s: idle for %.0f ms; closing", self.peer, idle_for * 1000)
            REFUSED["idle_timeout"].inc()
            self._close()
            return
        delay = self.idle_s if self._pending else self.idle_s - idle_for
        self._idle_handle = self._loop.call_later(delay, self._check_idle)

    def _close_bad(self, reason: str) -> None:
        """Peer broke the protocol: one log line, answered requests flushed, then close."""
        log.warning("%s: closing connection: %s", self.peer, reason)
        self._write_ready()
        self._close()

    def _close(self) -> None:
        if self._closing:
            return
        self._closing = True
        for slot in self._pending:
            if slot.task is not None:
                slot.task.cancel()
        self._transport.close()

    def begin_shutdown(self) -> None:
        """Read no more requests; close once every in-flight one is answered."""
        if self._closing:
            return
        self._shutting_down = True
        self._transport.pause_reading()
        if not self._pending:
            self._close()

    def abort(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.abort()
