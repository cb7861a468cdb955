"""One client connection, on either listener: frames in, handlers run, responses out in order.

Theory of operation: this is an ``asyncio.BufferedProtocol`` shell over the sans-I/O
``tslog.protocol.connection.Connection`` (``_wire``), which owns the wire: the socket receives
straight into its buffers (a large Produce request into a buffer of exactly its size, whose
records msgpack leaves in place: ``record_views``), it cuts and checks the frames, and it keeps
the answers in request order. The protocol is the *front*'s (``native_front.py`` for tslog's
own, ``kafka/front.py`` for Kafka's): its codec, which handler serves a request, the metrics it
counts in, and its answers to a failed handler and to a connection over a limit. Everything
else here (limits, unsent-byte accounting, idle timeout, closing, metrics, the login) is the
same for both listeners by construction.
``pump`` takes request events while no limit holds them back.
Fast handlers return a body and the request is answered at once; slow ones (durable produce,
long poll, offset commit) return an awaitable that runs as a task and answers when done.
After every event the answers now due are written, so responses go out in request order
however the handlers finish (pipelining).

Limits: the frame cap (a bigger length prefix closes the connection before any of the body is
read), at most ``max_in_flight_requests`` unanswered requests, and an idle timer. Bad input
costs the client its request or its connection, and the broker one log line; never a
traceback on the wire (a front without a generic error answer, Kafka's, closes the connection
on a handler's bug). The connection limits (``connection_registry.py``) are checked when a
connection is made: one over a limit answers its first request with TOO_MANY_CONNECTIONS and
closes (``refuse``); on the Kafka listener, which has no such answer, it closes at once.

Unsent bytes (a client that never reads must not grow our memory): a connection's *unsent*
bytes are its answered responses not yet written (``_wire.held_bytes``: waiting behind an
unanswered request) plus the transport's write buffer (``_buffered``). Requests are handled one
at a time from the received frames, and none while unsent >= ``max_unsent_response_bytes``; the socket has to
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
``resume_writing``; between those the real buffer only shrinks, so the figures can be high,
never low, by at most ``_WRITE_HIGH_BYTES`` for a connection not paused for writing.
"""

from __future__ import annotations

import asyncio
import logging
import time

from tslog.protocol.connection import NEED_DATA, ConnectionClosed, Refused, Role
from tslog.protocol.connection import Connection as WireConnection
from tslog.protocol.errors import LocalProtocolError, RemoteProtocolError
from tslog.protocol.frames import FrameTooLargeError, unzeroed_buffer
from tslog.protocol.messages import ForeignProtocolError, MalformedRequestError
from tslog.protocol.packed import PackedAnswer

from ..config import BrokerConfig
from ..data.pending import Pending, afterwards
from ..metrics.definitions import REFUSED
from ..security.sasl_session import SaslSession
from ..security.tls import certificate_principal
from .connection_registry import REFUSAL_WAIT_S, ConnectionRegistry, Refusal
from .idle_poll import IdlePoller

log = logging.getLogger("tslog.broker.connection")

_PRE_LOGIN = " (sasl_server_max_receive_size: not logged in yet)"
# What a front's ``call`` returns for a request that closes the connection unanswered (one
# before the login: the SASL session logged why).
CLOSE = object()
# The receive scratch of each connection: 1000-record Produce requests (~116 KB) arrive about
# two per read; with 64 KiB each took two reads. Not zeroed (``frames.py``): an idle
# connection holds address space, memory only for bytes received.
RECEIVE_SCRATCH_BYTES = 256 * 1024
# The transport's write-buffer high-water mark: ``pause_writing`` past it, ``resume_writing``
# at a quarter keep the unsent figures honest; the limits are ``max_unsent_response_bytes``.
_WRITE_HIGH_BYTES = 64 * 1024


class _Running:
    """A request answered later: what its answer and its metrics need, and its task (None
    for a ``Pending``, which has nothing to cancel: its answer is dropped once closing)."""

    __slots__ = ("api", "chunked", "started", "task", "bounded")

    def __init__(self, task: asyncio.Task | None, api, started: float, chunked: bool,
                 bounded: bool) -> None:
        self.task, self.api, self.started, self.chunked = task, api, started, chunked
        self.bounded = bounded  # of the front's ``bounded_api``: counted in ``_bounded``


class BrokerConnection(asyncio.BufferedProtocol):
    """One client's connection.

    Args:
        front: the protocol's side (``native_front.NativeFront``, ``kafka.front.KafkaFront``).
        config: the connection limits (frame size, requests in flight, unsent bytes, idle).
        idle_poller: the broker's one poller, told when each read was handled.
        registry: every live connection, for the broker-wide limits.
        authenticator: SASL's (``security/scram.py``); its login state is ``sasl``.
    """

    def __init__(self, front, config: BrokerConfig, idle_poller: IdlePoller,
                 registry: ConnectionRegistry, authenticator=None) -> None:
        self.front = front
        self.idle_poller = idle_poller
        self.registry = registry
        self.max_in_flight = config.max_in_flight_requests
        self.max_unsent = config.max_unsent_response_bytes
        self.idle_s = config.connections_max_idle_ms / 1000
        self._rules = config.tls_principal_mapping_rules
        self._wire = WireConnection(Role.SERVER, max_frame_bytes=config.max_frame_bytes,
                                    record_views=True, allocate=unzeroed_buffer,
                                    scratch_bytes=RECEIVE_SCRATCH_BYTES, codec=front.codec)
        # Per request, read once here: the front's answers and metrics.
        self._failure_answer, self._chunked_api = front.failure_answer, front.chunked_api
        self._metrics, self._finish = front.metrics, front.finish
        # Requests of the front's ``bounded_api`` whose answer is still being built (a long
        # poll, a conversion off the loop) that may run at once; no more is read meanwhile.
        self._bounded_api, self._max_bounded = front.bounded_api, front.max_bounded
        self._bounded = 0
        receiver = self._wire.receiver
        # The core's received frames (``FrameReceiver.frames``, public for per-request
        # owners): whether one waits is a truth test on it, not two property calls.
        self._received = receiver.frames
        # Whether the stream broke (an oversized frame: ``next_event`` raises it once the
        # frames before it are served). The server's only event besides a frame, as it
        # hears of the peer's close from ``eof_received``: read as an attribute, no call.
        self._receiver = receiver
        # The socket writes straight into the receiver's buffer (no call of ours per read);
        # once the stream broke it offers a discard buffer; once closed, no more reads.
        self.get_buffer = receiver.get_buffer
        self._running: dict[int, _Running] = {}  # by request sequence
        self._held = 0  # the core's held bytes, as counted in the registry
        self._buffered = 0  # the transport's write buffer, as last read
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future = self._loop.create_future()
        self.peer = self.host = "?"
        self._refusal: Refusal | None = None  # over a connection limit: answer, then close
        self._refusal_handle: asyncio.TimerHandle | None = None
        self._closing = False
        self._shutting_down = False  # the broker stops: no new requests, close when answered
        self._eof = False  # the client half-closed: answer what it sent, then close
        self._pumping = False
        self._pump_due = False  # ``_pump_after_answers`` is scheduled
        self._read_paused = False
        self._write_paused = False
        self._last_activity = 0.0
        self._idle_handle: asyncio.TimerHandle | None = None
        # Who the client is (``tslog.broker.security``): ``principal`` and ``authenticated``
        # start as SaslSession says (anonymous; authenticated at once unless SASL is on), and
        # change through ``registry.principal_set`` (mutual TLS, SCRAM).
        self.sasl = SaslSession(authenticator, self)
        self._call = front.bind(self)  # (header, body) -> the handler's result
    def _count_held(self) -> None:
        """Bring the registry's total up to date with the answers the core holds."""
        held = self._wire.held_bytes
        self.registry.unsent_bytes += held - self._held
        self._held = held

    # -- transport callbacks ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.host = peer[0] if isinstance(peer, tuple) else str(peer)
        self.principal = certificate_principal(transport, self.peer, self._rules)  # mTLS
        if self.principal is None:  # no tls_principal_mapping_rules rule (logged): refused
            return self.abort()
        refusal = self.registry.admit(self)
        if refusal is not None:
            if not self.front.answers_refusals:  # Kafka's: no answer says why; closed
                return self.abort()
            self.refuse(refusal)
            return
        # Below the cap, so a connection the cap holds back is paused for writing and hears
        # of the drain (see the module docstring).
        transport.set_write_buffer_limits(high=min(_WRITE_HIGH_BYTES, self.max_unsent // 2))
        self._last_activity = self._loop.time()
        self._idle_handle = self._loop.call_later(self.idle_s, self._check_idle)
        self.sasl.start(self._loop, self._receiver)

    def buffer_updated(self, nbytes: int) -> None:
        if self._closing:
            return
        started = time.perf_counter()
        self._last_activity = self._loop.time()
        self._wire.buffer_updated(nbytes)  # an oversized frame is reported by the next event
        # Not for each read of a large frame's middle:
        if self._received or self._receiver.error is not None:
            self.pump()
        self.idle_poller.handled(self._loop, started)

    def data_received(self, data) -> None:
        """Bytes handed over rather than received in place (a transport without buffer
        support, or a test driving the connection by hand): copied into the core, then
        handled as a read that brought nothing more."""
        if not self._closing:
            self._wire.receive_data(data)
            self.buffer_updated(0)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        registry = self.registry
        registry.release(self)
        registry.unsent_bytes -= self._held + self._buffered
        self._held = self._buffered = 0
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        self.sasl.stop()
        unfinished = self._wire.receiver.buffered_bytes
        if unfinished:
            log.warning("%s: disconnected inside a frame; dropped %d bytes of it", self.peer,
                        unfinished)
        self._cancel_running()
        self._end_refusal()
        if not self.closed.done():
            self.closed.set_result(None)
        if registry.waiting:
            registry.wake()

    def eof_received(self) -> bool | None:
        """The client half-closed: answer what it already sent, then close our side."""
        if (self._wire.unanswered or self._received) and not self._closing:
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
        """Handle received requests while no limit holds them back, write what is
        answered, and pause or resume reading the socket to match."""
        if self._pumping or self._closing:
            return  # the call below this one on the stack goes on from here
        self._pumping = True
        try:
            wire = self._wire
            received, receiver = self._received, self._receiver
            while True:
                # A received frame is the usual event; a broken stream is looked at only
                # when none is waiting.
                while (received or receiver.error is not None) and not self._blocked():
                    try:
                        event = wire.next_event()
                    except FrameTooLargeError as exc:
                        REFUSED["oversize_frame"].inc()
                        self._close_bad(f"{exc}{'' if self.authenticated else _PRE_LOGIN}")
                        return
                    except ForeignProtocolError as exc:
                        REFUSED["bad_frame"].inc()
                        self._close_foreign(str(exc))
                        return
                    except (MalformedRequestError, RemoteProtocolError) as exc:
                        REFUSED["bad_frame"].inc()
                        self._close_bad(str(exc))
                        return
                    if event is NEED_DATA or type(event) is ConnectionClosed:
                        break
                    self._handle(event)
                    if self._closing:
                        return
                # Writing can lower the unsent bytes: then more requests may go on. Also when
                # none was handled this round (an answer that was holding them back just came):
                # if the socket took everything, no resume_writing will ever come to say so.
                if not self._write_ready() or not received:
                    break
        finally:
            self._pumping = False
        self._update_reading()

    def _blocked(self) -> bool:
        """True while this connection must not take another request (module docstring)."""
        if (self._wire.unanswered >= self.max_in_flight
                or self._held + self._buffered >= self.max_unsent
                or self._bounded >= self._max_bounded):
            return True
        registry = self.registry
        if registry.unsent_bytes < registry.max_unsent_bytes:
            return False
        if not self._held and not self._write_paused:
            return False  # holds (almost) nothing: its fair share, whoever else holds
        registry.waiting.add(self)
        return True

    def _handle(self, event) -> None:
        if self._refusal is not None:
            self._answer_refusal(event)
            return
        if type(event) is Refused:  # answered by the protocol core with its typed error
            self.front.refused(self.peer, event.error)
            self._count_held()
            return
        header, body = event.header, event.body
        started = time.perf_counter()
        try:
            result = self._call(header, body)
        except Exception:
            log.exception("%s: the handler of api %d failed", self.peer, header.api_key)
            result = self._failure_answer
            if result is None:  # the protocol has no error answer for it: close
                return self._close()
        if result is CLOSE:
            return self._close()
        if event.sequence is None:  # Produce with acks = 0: no response at all
            self._finish(self._metrics(header, body), None, started)
            return
        chunked = header.api_key is self._chunked_api
        if type(result) is dict or type(result) is PackedAnswer:
            self._answer(event.sequence, result, chunked)
            self._finish(self._metrics(header, body), result, started)
        elif type(result) is Pending:  # settled by a later call on the loop, with no task
            self._running[event.sequence] = _Running(None, self._metrics(header, body),
                                                     started, chunked, False)
            result.add_callback(lambda pending, sequence=event.sequence:
                                self._on_done(sequence, pending))
        else:
            task = self._loop.create_task(result)
            bounded = header.api_key == self._bounded_api
            self._bounded += bounded
            self._running[event.sequence] = _Running(task, self._metrics(header, body),
                                                     started, chunked, bounded)
            task.add_done_callback(lambda task, sequence=event.sequence:
                                   self._on_done(sequence, task))

    def _answer(self, sequence: int, body: dict, chunked: bool) -> None:
        """Hand the answer to the core; its bytes count as held until ``_write_ready``."""
        wire = self._wire
        try:
            wire.answer(sequence, body, chunked=chunked)
        except LocalProtocolError:
            log.exception("%s: the response to request %d cannot be encoded", self.peer,
                          sequence)
            if self._failure_answer is None:  # answered with nothing: the stream ends here
                self._write_ready()
                self._close()
        held = wire.held_bytes  # ``_count_held`` inlined (once per request)
        self.registry.unsent_bytes += held - self._held
        self._held = held

    def _on_done(self, sequence: int, outcome: asyncio.Task | Pending) -> None:
        """A later answer came: its task ended, or its ``Pending`` was settled."""
        running = self._running.pop(sequence, None)
        if running is not None:
            self._bounded -= running.bounded
        if self._closing or running is None or (running.task is not None and
                                                 outcome.cancelled()):
            return
        try:
            body = outcome.result()
        except Exception as error:  # noqa: BLE001 - the handler failed: its answer says so
            log.error("%s: handler failed", self.peer, exc_info=error)
            body = self._failure_answer
            if body is None:  # the protocol has no error answer for it: close
                self._write_ready()
                return self._close()
        self._answer(sequence, body, running.chunked)
        self._finish(running.api, body, running.started)
        if not self._pump_due:
            self._pump_due = True
            afterwards(self._pump_after_answers, self._loop)

    def _pump_after_answers(self) -> None:
        """Pump once for the answers that came together: at the end of the group commit
        round that settled them (``pending.together``), else of the loop iteration. The
        requests one round made durable are answered in one write, not each in a send of
        its own, and at once, not behind what the loop reads next."""
        self._pump_due = False
        self.pump()

    def _write_ready(self) -> bool:
        """Write the answers now due, in request order; True if any."""
        wire = self._wire
        frames = wire.data_to_send()
        if not frames:
            return False
        held = wire.held_bytes  # ``_count_held`` inlined, as in ``_answer`` (once per request)
        self.registry.unsent_bytes += held - self._held
        self._held = held
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
            if not self._wire.unanswered and not self._received:
                self._close()
            return
        should_pause = bool(self._received) or self._blocked()
        if should_pause and not self._read_paused:
            self._read_paused = True
            self._transport.pause_reading()
        elif not should_pause and self._read_paused:
            self._read_paused = False
            self._transport.resume_reading()

    # -- closing ---------------------------------------------------------------------------

    def refuse(self, refusal: Refusal) -> None:
        """Over a connection limit (``connection_registry``): answer the client's next
        request with TOO_MANY_CONNECTIONS, naming the limit, and close; close unanswered if
        none comes within ``REFUSAL_WAIT_S`` (the socket is not held longer), or at once
        when too many refused connections are already waiting (a flood: the registry's
        ``hold_refusal`` logs that close)."""
        if self._closing or self._refusal is not None:
            return
        if not self.registry.hold_refusal(self):
            self.abort()
            return
        self._refusal = refusal
        self._refusal_handle = self._loop.call_later(REFUSAL_WAIT_S, self._close)

    def _end_refusal(self) -> None:
        """The refusal is over (answered, timed out, or the connection closed): its place
        among the waiting refusals is free at once, not when a TLS peer answers our close."""
        if self._refusal_handle is not None:
            self._refusal_handle.cancel()
            self._refusal_handle = None
            self.registry.refusal_done(self)

    def refusal_response(self, api_key: int) -> dict | None:
        """The answer a handler gives instead of its own once the connection was refused
        (e.g. SCRAM's last step after ``registry.principal_set`` said no); None if not, or
        if the protocol has no answer for this API (the connection closes unanswered)."""
        if self._refusal is None:
            return None
        return self.front.refusal_response(self._refusal, api_key)

    def _answer_refusal(self, event) -> None:
        """The refused connection's request: the typed error (a request owed no answer, or
        one the core already refused, gets none), then the close."""
        answer = None if type(event) is Refused or event.sequence is None else \
            self.refusal_response(event.header.api_key)
        if answer is not None:
            self._answer(event.sequence, answer, False)
        else:
            self._count_held()
        self._write_ready()
        self._close()

    def _check_idle(self) -> None:
        if self._closing:
            return
        now = self._loop.time()
        idle_for = now - self._last_activity
        if idle_for >= self.idle_s and not self._wire.unanswered:
            log.warning("%s: idle for %.0f ms; closing", self.peer, idle_for * 1000)
            REFUSED["idle_timeout"].inc()
            self._close()
            if self._transport.get_write_buffer_size():
                # Its client has not read for the whole idle time: a close would keep the
                # unsent answers (up to the cap) until it does, maybe forever.
                self._transport.abort()
            return
        delay = self.idle_s if self._wire.unanswered else self.idle_s - idle_for
        self._idle_handle = self._loop.call_later(delay, self._check_idle)

    def _close_bad(self, reason: str) -> None:
        """Peer broke the protocol: one log line, answered requests flushed, then close;
        before login, abort (a TLS close would read and decrypt the rest of its flood)."""
        log.warning("%s: closing connection: %s", self.peer, reason)
        self._write_ready()
        self._close()
        if not self.authenticated:
            self._transport.abort()

    def _close_foreign(self, reason: str) -> None:
        """Another protocol's client (Kafka's): say so once a minute per host, then close."""
        if self.registry.foreign_clients.first_in_a_while(self.host, self._loop.time()):
            log.warning("%s: closing connection: %s", self.peer, reason)
        else:
            log.debug("%s: closing connection: %s", self.peer, reason)
        self._close()

    def _cancel_running(self) -> None:
        running, self._running = self._running, {}
        self._bounded = 0
        for entry in running.values():
            if entry.task is not None:
                entry.task.cancel()

    def _close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self.registry.release(self)  # its slot is free now, however long a TLS close takes
        self._wire.drop_unread()
        self._cancel_running()
        self._end_refusal()
        self._transport.close()

    def begin_shutdown(self) -> None:
        """Read no more requests (those not yet handled are dropped, as if never read);
        close once every in-flight one is answered."""
        if self._closing:
            return
        self._shutting_down = True
        self._wire.drop_unread()
        self._transport.pause_reading()
        if not self._wire.unanswered:
            self._close()

    def abort(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.abort()
