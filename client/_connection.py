"""One TCP connection to one broker: pipelined requests matched to responses in order.

Theory of operation. ``Connection`` is an ``asyncio.BufferedProtocol`` shell over the sans-I/O
``tslog.protocol.connection.Connection``, which does the wire: framing (the socket receives
into its buffers: small responses into a reused scratch, a large Fetch response into a buffer
of its own size), correlation ids and response checks. Requests are written as soon as they
are sent; each one that expects a response appends its future to a deque. The broker answers
in request order, so every response answers the head of the deque; one that does not means
the stream is out of sync (the protocol core says so) and the connection is closed.

Limits: ``max_in_flight`` responses may be outstanding (``send`` waits for a slot, and
``has_capacity`` lets a sender that must not wait check first); a request that gets no answer
within its timeout fails with ``RequestTimedOutError`` and closes the connection, because the
late answer would otherwise be matched to the next request. Deadlines are watched by one
timer per connection, armed at the earliest pending deadline and re-armed when it fires,
not by a timer per request. Closing, for any reason, fails every pending future with
``ConnectionLostError``. Reconnecting is the owner's job (``_cluster.Cluster``): a closed
Connection stays closed.

Produce with acks=0 expects no response: its future resolves once the bytes are handed to the
transport.

Answer polling (``poll_s`` of a request, for time lookups): while such a request waits, a
ready callback keeps the event loop polling its sockets with a zero timeout instead of
sleeping in ``epoll_wait``, for at most ``poll_s`` after the send and never past the answer.
Why: a thread that sleeps halts its vCPU, and on a virtual machine the wake-up when the
answer arrives costs more than the broker's whole answer (a ListOffsets round trip here
was about twice as long at the median sleeping as polling). The price is the CPU of the
wait itself, at most ``poll_s`` a request; other callbacks on the loop run as usual.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import logging
import socket
import ssl
import time

from tslog.protocol.connection import NEED_DATA, BadResponse
from tslog.protocol.connection import Connection as WireConnection
from tslog.protocol.connection import Role
from tslog.protocol.errors import ProtocolError
from tslog.protocol.frames import DISCARD_VIEW, MAX_FRAME_BYTES
from tslog.protocol.messages import KafkaAnswerError

from ._login import login
from .errors import (
    ConnectionLostError,
    InvalidResponseError,
    RequestTimedOutError,
    SecurityRequiredError,
    TlsError,
    WrongProtocolError,
    error_for,
)
from ._tls import closed_unanswered, is_tls_failure, kafka_listener_error, tls_failure_message
from .security import Security

log = logging.getLogger(__name__)


class Connection(asyncio.BufferedProtocol):
    """A pipelined request/response connection. Create with ``await Connection.open(...)``."""

    def __init__(self, host: str, port: int, *, client_id: str | None,
                 max_in_flight: int, max_frame_bytes: int) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.max_in_flight = max_in_flight
        self._wire = WireConnection(Role.CLIENT, max_frame_bytes=max_frame_bytes,
                                    client_id=client_id)
        self._pending: collections.deque = collections.deque()
        self._transport: asyncio.Transport | None = None
        self._closed_error: BaseException | None = None
        self._slot_waiters: collections.deque = collections.deque()
        self._timer: asyncio.TimerHandle | None = None  # fires at _timer_at
        self._timer_at = 0.0
        self._drain_waiter: asyncio.Future | None = None
        self._paused = False
        self.on_close = None  # optional callback(connection), for the owner's bookkeeping
        self.on_ready = None  # optional callback(): a slot freed or writing resumed
        self._poll_until = 0.0  # answer polling goes on until then (perf_counter seconds)
        self._polling = False
        self.tls = False  # set by ``open``: the connection speaks TLS
        self._answered = False  # a first answer came: a close is no longer a refusal

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str | None = None,
                   max_in_flight: int = 5, max_frame_bytes: int = MAX_FRAME_BYTES,
                   timeout_ms: int = 10_000, security: Security | None = None,
                   ssl_context: ssl.SSLContext | None = None) -> Connection:
        """Connect (and, with ``security``, do the TLS handshake, with ``ssl_context`` if
        the owner built it once, else one made here, then log in when it says SASL); raises
        ``ConnectionLostError`` if the broker cannot be reached in time, ``TlsError`` if the
        handshake fails, ``SaslAuthenticationFailedError`` (and the other login errors) if
        the broker refuses the login."""
        loop = asyncio.get_running_loop()
        if ssl_context is None and security is not None:
            ssl_context = security.ssl_context()
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: cls(host, port, client_id=client_id, max_in_flight=max_in_flight,
                                max_frame_bytes=max_frame_bytes),
                    host, port, ssl=ssl_context,
                    server_hostname=host if ssl_context is not None else None),
                timeout_ms / 1000)
            protocol.tls = ssl_context is not None
        except (OSError, asyncio.TimeoutError) as exc:
            if ssl_context is not None and is_tls_failure(exc):
                raise TlsError(tls_failure_message(host, port, exc)) from None
            raise ConnectionLostError(f"cannot connect to {host}:{port}: {exc!r}") from exc
        await login(protocol, security, timeout_ms)
        return protocol

    # ------------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport) -> None:
        self._transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._closed_error is not None:  # bytes still arriving before the close: dropped
            return DISCARD_VIEW
        return self._wire.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._closed_error is not None:
            return
        wire = self._wire
        try:
            wire.buffer_updated(nbytes)
            while (event := wire.next_event()) is not NEED_DATA:
                self._deliver(event)
                if self._closed_error is not None:
                    return
        except KafkaAnswerError:
            self._fail(kafka_listener_error(self.host, self.port))
        except ProtocolError as exc:
            self._fail(ConnectionLostError(f"{self}: unreadable response stream: {exc}"))

    def _deliver(self, event) -> None:
        self._answered = True
        future = self._pending.popleft()[0]
        self._release_slot()
        if self.on_ready is not None:
            self.on_ready()
        if future.done():
            return
        if type(event) is BadResponse:
            future.set_exception(InvalidResponseError(str(event.error)))
            return
        body = event.body
        # Only ApiVersions has a top-level error_code in its normal body; for every other
        # API a top-level error_code means the whole request was refused.
        code = body.get("error_code", 0)
        if code:
            future.set_exception(error_for(code)(body.get("error_message")))
        else:
            future.set_result(body)

    def connection_lost(self, exc) -> None:
        if isinstance(exc, ssl.SSLError):
            self._fail(TlsError(tls_failure_message(self.host, self.port, exc)))
        elif not self._answered and self._pending:  # closed before answering anything
            self._fail(closed_unanswered(self.host, self.port, self.tls))
        else:
            self._fail(ConnectionLostError(f"{self}: connection closed"
                                           + (f": {exc!r}" if exc else "")))

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self.on_ready is not None:
            self.on_ready()

    # ---------------------------------------------------------------------------- public

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def has_capacity(self) -> bool:
        """True when a request may be written now: a free slot and no write backpressure."""
        return (not self.closed and not self._paused
                and len(self._pending) < self.max_in_flight)

    def send_nowait(self, api_key: int, body: dict, *, timeout_ms: int | None,
                    api_version: int = 0, poll_s: float = 0.0) -> asyncio.Future:
        """Write one request now and return the future of its response body (None at once for
        a Produce with acks = 0, which gets no response).

        The caller checks ``has_capacity`` first when it must respect ``max_in_flight``; this
        method never waits. The future fails with a ``TslogError`` subclass: the broker's
        top-level error code, ``RequestTimedOutError`` or ``ConnectionLostError``. With
        ``poll_s`` the loop polls for the answer that long at most (see the module's doc).
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        if self._closed_error is not None:
            future.set_exception(self._closed_error_again())
            return future
        wire = self._wire
        expected = wire.outstanding
        # Built here, from checked arguments; a Produce's batches go out uncopied.
        _, frame = wire.send_request(api_key, body, api_version=api_version, validate=False)
        if len(frame) == 1:
            self._transport.write(frame[0])
        else:
            self._transport.writelines(frame)
        if wire.outstanding == expected:  # acks = 0: no response will come
            future.set_result(None)
            return future
        deadline = None
        if timeout_ms is not None:
            deadline = loop.time() + timeout_ms / 1000
            if self._timer is None or deadline < self._timer_at:
                self._arm_timer(loop, deadline)
        self._pending.append((future, deadline, timeout_ms))
        if poll_s > 0:
            self._poll_until = max(self._poll_until, time.perf_counter() + poll_s)
            if not self._polling:
                self._polling = True
                loop.call_soon(self._poll_for_answers, loop)
        return future

    async def send(self, api_key: int, body: dict, *, timeout_ms: int | None = 30_000,
                   poll_s: float = 0.0, api_version: int = 0) -> dict | None:
        """Wait for an in-flight slot and the transport's buffer, send, await the response."""
        if len(self._pending) < self.max_in_flight and not self._paused:  # nothing to wait for
            return await self.send_nowait(api_key, body, timeout_ms=timeout_ms, poll_s=poll_s,
                                           api_version=api_version)
        while len(self._pending) >= self.max_in_flight and not self.closed:
            waiter = asyncio.get_running_loop().create_future()
            self._slot_waiters.append(waiter)
            await waiter
        await self.drain()
        return await self.send_nowait(api_key, body, timeout_ms=timeout_ms, poll_s=poll_s,
                                           api_version=api_version)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is over its high-water mark."""
        if self._paused and not self.closed:
            if self._drain_waiter is None:
                self._drain_waiter = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._drain_waiter)

    def close(self) -> None:
        self._fail(ConnectionLostError(f"{self}: closed by the client"))

    def __repr__(self) -> str:
        return f"<Connection {self.host}:{self.port}>"

    # --------------------------------------------------------------------------- private

    def _poll_for_answers(self, loop) -> None:
        """A ready callback makes the loop's next wait a zero-timeout poll: go on while an
        answer is awaited and the window lasts."""
        if self._pending and time.perf_counter() < self._poll_until:
            loop.call_soon(self._poll_for_answers, loop)
        else:
            self._polling = False

    def _arm_timer(self, loop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._check_deadlines)
        self._timer_at = when

    def _check_deadlines(self) -> None:
        """The timer fired: fail on an expired request, else re-arm for the next deadline."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        earliest = None
        for future, deadline, timeout_ms in self._pending:
            if deadline is None:
                continue
            if deadline <= now:
                self._timed_out(future, timeout_ms)
                return
            if earliest is None or deadline < earliest:
                earliest = deadline
        if earliest is not None:
            self._arm_timer(loop, earliest)

    def _timed_out(self, future: asyncio.Future, timeout_ms: int) -> None:
        if not future.done():
            future.set_exception(RequestTimedOutError(
                f"{self}: no response within {timeout_ms} ms"))
        # The answer may still come and would be matched to the wrong request: start over.
        self._fail(ConnectionLostError(f"{self}: closed after a request timed out"))

    def _release_slot(self) -> None:
        while self._slot_waiters:
            waiter = self._slot_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _closed_error_again(self) -> BaseException:
        """A fresh copy of why the connection closed, for one more waiter: its own traceback,
        and the kinds a caller tells apart (TLS, security wanted, a Kafka port) kept."""
        error = self._closed_error
        if isinstance(error, (TlsError, SecurityRequiredError, WrongProtocolError)):
            return copy.copy(error)
        return ConnectionLostError(str(error))

    def _fail(self, error: BaseException) -> None:
        if self._closed_error is not None:
            return
        self._closed_error = error
        if self._transport is not None:
            self._transport.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, collections.deque()
        for future, _, _ in pending:
            if not future.done():
                future.set_exception(self._closed_error_again())
        for waiter in self._slot_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._slot_waiters.clear()
        self.resume_writing()
        if self.on_close is not None:
            self.on_close(self)

