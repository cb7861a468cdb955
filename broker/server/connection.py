"""One client connection: frames in, handlers run, responses out in request order.

Theory of operation: ``data_received`` feeds the bytes to a ``FrameDecoder`` and queues each
whole frame in ``_backlog``; ``pump`` handles queued frames while no limit holds them back.
A request gets a slot in ``_pending`` (a deque in request order). Fast handlers return a body
and the slot is filled immediately; slow ones (durable produce, long poll, offset commit)
return an awaitable that runs as a task and fills its slot when done. After every event the
filled slots at the head of the deque are written, so responses go out in request order
however the handlers finish (pipelining).

Limits: the frame cap (a bigger length prefix closes the connection before any of the body is
read), at most ``max_in_flight_requests`` unanswered requests, and an idle timer. Bad input
costs the client its request or its connection, and the broker one log line; never a
traceback on the wire.

Unsent bytes (a client that never reads must not grow our memory): a connection's *unsent*
bytes are its answered responses not yet written (``_held``: waiting behind an unanswered
request) plus the transport's write buffer (``_buffered``). Requests are handled one at a time
from the backlog, and none while unsent >= ``max_unsent_response_bytes``; the socket has to
drain first (``resume_writing`` says when). So a connection holds at most that cap plus the
responses to requests already handled when it was reached (one synchronous response, plus any
long polls still running). Reading from the socket pauses while the backlog is blocked, so the
backlog is at most one read's worth of small requests. Broker-wide, ``ConnectionRegistry``
sums every connection's unsent bytes; at ``max_total_unsent_response_bytes`` only connections
that hold nothing (nothing held, write buffer under its high-water mark) handle another
request; the others wait until their own socket drains. So no client waits on another's
reading, a well-behaved consumer is still served (one request at a time, while the pressure
lasts), and the total stays under the cap plus one response per connection.

Accounting is event-driven, no timers: ``_buffered`` is read after each write and at
``resume_writing``. Between those the real buffer only shrinks, so the figures can be high,
never low, and by at most the transport's high-water mark (``_WRITE_HIGH_BYTES``) for a
connection that is not paused for writing: no limit can wait on a drain nobody reports.
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
# The transport's write-buffer high-water mark: past it ``pause_writing`` is called, and
# ``resume_writing`` once it drains to a quarter. Those two calls keep the unsent figures
# honest; the limits themselves are ``max_unsent_response_bytes`` and the broker-wide one.
_WRITE_HIGH_BYTES = 64 * 1024


class _Slot:
    __slots__ = ("correlation_id", "frame", "size", "task", "chunked", "api", "started")

    def __init__(self, correlation_id: int, frame: list | None = None,
                 chunked: bool = False) -> None:
        self.correlation_id = correlation_id
        self.frame = frame  # the encoded response (a list of buffers), once known
        self.size = 0  # bytes of ``frame``, counted in the connection's ``_held``
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


def _frame_bytes(frame: list) -> int:
    if len(frame) == 1:
        return len(frame[0])
    return sum(map(len, frame))


class ConnectionRegistry:
    """The live connections: enforces ``max_connections``, sums their unsent response bytes
    against ``max_unsent_bytes`` (see the module docstring), and drains them at shutdown."""

    def __init__(self, max_connections: int, max_unsent_bytes: int = 1 << 62) -> None:
        self.max_connections = max_connections
        self.connections: set[BrokerConnection] = set()
        self.refused = 0
        self.max_unsent_bytes = max_unsent_bytes
        self.unsent_bytes = 0  # every connection's held + buffered response bytes
        self.waiting: set[BrokerConnection] = set()  # held back by the broker-wide cap
        self._wake_scheduled = False

    def admit(self, connection: BrokerConnection) -> bool:
        if len(self.connections) >= self.max_connections:
            self.refused += 1
            REFUSED["too_many_connections"].inc()
            return False
        self.connections.add(connection)
        OPEN_CONNECTIONS.inc()
        return True

    def release(self, connection: BrokerConnection) -> None:
        self.waiting.discard(connection)
        if connection in self.connections:
            self.connections.remove(connection)
            OPEN_CONNECTIONS.dec()

    def wake(self) -> None:
        """The total went down: soon, let the connections it held back try again (each
        re-checks, and waits again if the ones before it took the room). Called from deep
        inside other connections' writes, so it only schedules."""
        if not self._wake_scheduled and self.unsent_bytes < self.max_unsent_bytes:
            self._wake_scheduled = True
            asyncio.get_running_loop().call_soon(self._wake_now)

    def _wake_now(self) -> None:
        self._wake_scheduled = False
        waiting = list(self.waiting)
        self.waiting.clear()
        for connection in waiting:
            connection.pump()

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
        self.max_unsent = config.max_unsent_response_bytes
        self.idle_s = config.connections_max_idle_ms / 1000
        self._decoder = FrameDecoder(config.max_frame_bytes)
        self._pending: collections.deque[_Slot] = collections.deque()
        self._backlog: collections.deque[bytes] = collections.deque()  # frames not handled yet
        self._held = 0  # bytes of answered responses waiting behind an unanswered one
        self._buffered = 0  # the transport's write buffer, as last read
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future = self._loop.create_future()
        self.peer = "?"
        self._closing = False
        self._shutting_down = False  # the broker stops: no new requests, close when answered
        self._eof = False  # the client half-closed: answer what it sent, then close
        self._pumping = False
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
        # Below the cap, so a connection the cap holds back is paused for writing and hears
        # of the drain (see the module docstring).
        transport.set_write_buffer_limits(high=min(_WRITE_HIGH_BYTES, self.max_unsent // 2))
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
        self._backlog.extend(frames)
        self.pump()
        self.broker.idle_poller.handled(self._loop, started)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        registry = self.registry
        registry.release(self)
        registry.unsent_bytes -= self._held + self._buffered
        self._held = self._buffered = 0
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        if self._decoder.buffered_bytes:
            log.warning("%s: disconnected inside a frame; dropped %d bytes of it", self.peer,
                        self._decoder.buffered_bytes)
        for slot in self._pending:
            if slot.task is not None:
                slot.task.cancel()
        self._pending.clear()
        self._backlog.clear()
        if not self.closed.done():
            self.closed.set_result(None)
        if registry.waiting:
            registry.wake()

    def eof_received(self) -> bool | None:
        """The client half-closed: answer what it already sent, then close our side."""
        if (self._pending or self._backlog) and not self._closing:
            self._eof = True
            return True  # keep the transport open for the responses still owed
        return None  # nothing owed: let the transport close

    def pause_writing(self) -> None:
        self._write_paused = True  # ``_write_ready`` reads the buffer's size right after

    def resume_writing(self) -> None:
        """The write buffer drained to its low-water mark: count it, and read on."""
        self._write_paused = False
        if self._closing:
            return
        self._last_activity = self._loop.time()  # the client is reading: not idle
        self._count_buffered()
        self.pump()

    # -- requests --------------------------------------------------------------------------

    def pump(self) -> None:
        """Handle backlogged requests while no limit holds them back, write what is
        answered, and pause or resume reading the socket to match."""
        if self._pumping or self._closing:
            return  # the call below this one on the stack goes on from here
        self._pumping = True
        try:
            backlog = self._backlog
            while True:
                handled = False
                while backlog and not self._blocked():
                    self._handle_frame(backlog.popleft())
                    if self._closing:
                        return
                    handled = True
                # Writing can lower the unsent bytes: then the backlog may go on.
                if not self._write_ready() or not handled or not backlog:
                    break
        finally:
            self._pumping = False
        self._update_reading()

    def _blocked(self) -> bool:
        """True while this connection must not take another request (module docstring)."""
        if (len(self._pending) >= self.max_in_flight
                or self._held + self._buffered >= self.max_unsent):
            return True
        registry = self.registry
        if registry.unsent_bytes < registry.max_unsent_bytes:
            return False
        if not self._held and not self._write_paused:
            return False  # holds (almost) nothing: its fair share, whoever else holds
        registry.waiting.add(self)
        return True

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
            slot = _Slot(exc.correlation_id)
            self._pending.append(slot)
            self._fill(slot, _encode(exc.correlation_id, exc.response_body()))
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
        self._pending.append(slot)
        if type(result) is dict:
            self._fill(slot, _encode(header.correlation_id, result, slot.chunked))
            finish_request(api_metrics(header.api_key, body), result, started)
        else:
            slot.api = api_metrics(header.api_key, body)
            slot.started = started
            slot.task = self._loop.create_task(result)
            slot.task.add_done_callback(lambda task, slot=slot: self._on_done(slot, task))

    def _fill(self, slot: _Slot, frame: list) -> None:
        """The slot is answered: its bytes count as held until ``_write_ready`` writes them."""
        slot.frame = frame
        slot.size = size = _frame_bytes(frame)
        self._held += size
        self.registry.unsent_bytes += size

    def _on_done(self, slot: _Slot, task: asyncio.Task) -> None:
        if self._closing or task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("%s: handler failed", self.peer, exc_info=error)
            body = _SERVER_ERROR
        else:
            body = task.result()
        self._fill(slot, _encode(slot.correlation_id, body, slot.chunked))
        finish_request(slot.api, body, slot.started)
        self.pump()

    def _write_ready(self) -> bool:
        """Write the answered requests at the head of the queue, in order; True if any."""
        pending = self._pending
        if not pending or pending[0].frame is None:
            return False
        frames = []
        released = 0
        while pending and pending[0].frame is not None:
            slot = pending.popleft()
            frames += slot.frame
            released += slot.size
        self._held -= released
        self.registry.unsent_bytes -= released
        if not self._closing:
            self._transport.writelines(frames)
            self._count_buffered()
        return True

    def _count_buffered(self) -> None:
        buffered = self._transport.get_write_buffer_size()
        registry = self.registry
        registry.unsent_bytes += buffered - self._buffered
        self._buffered = buffered
        if registry.waiting:
            registry.wake()

    def _update_reading(self) -> None:
        if self._closing:
            return
        if self._shutting_down or self._eof:
            if not self._pending and not self._backlog:
                self._close()
            return
        should_pause = bool(self._backlog) or self._blocked()
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
            if self._transport.get_write_buffer_size():
                # Its client has not read for the whole idle time: a close would keep the
                # unsent answers (up to the cap) until it does, maybe forever.
                self._transport.abort()
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
        self._backlog.clear()
        for slot in self._pending:
            if slot.task is not None:
                slot.task.cancel()
        self._transport.close()

    def begin_shutdown(self) -> None:
        """Read no more requests (those not yet handled are dropped, as if never read);
        close once every in-flight one is answered."""
        if self._closing:
            return
        self._shutting_down = True
        self._backlog.clear()
        self._transport.pause_reading()
        if not self._pending:
            self._close()

    def abort(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.abort()
