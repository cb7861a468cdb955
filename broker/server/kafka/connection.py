"""One Kafka client connection: Kafka frames in, adapters run, responses out in order.

Theory of operation. Kafka frames a message exactly as tslog does (a 4-byte big-endian size,
then the message), so the socket receives straight into tslog's ``FrameReceiver``, which cuts
frames and enforces ``max_frame_bytes`` before a byte of an oversized body is buffered. Each
frame is decoded by the sans-I/O Kafka codec (``tslog.protocol.kafka.decode_request``), its
adapter (``dispatch.TABLE``) runs, and the response is encoded for the request's version.

Why not the native ``protocol.connection.Connection`` core: everything in it past the
framing is msgpack's (envelope checks, schema checks, record views, chunked Fetch
encoding), and its answer slots hold native bodies; the part that fits, the framing, is
reused as it is. What is left here is small: the answer slots in request order (Kafka
clients pipeline, and a response must follow its request's order), the pause of reading at
``max_in_flight_requests`` unanswered requests or when the socket's write buffer is full,
and the close rules.

Errors: an API or version the listener does not advertise is answered UNSUPPORTED_VERSION
(ApiVersions in its v0 shape, which every client reads, as Kafka does; any other API with a
response header and the int16 error code, the shape its v0 answer starts with) and the
connection goes on. Bytes that are not a Kafka request (a bad size, a body that does not
decode) close this connection after one log line; an exception from an adapter is a bug,
logged with its traceback on the broker only, and closes the connection (a Kafka response
has no generic error shape to send instead). Nothing reaches the client but Kafka responses.

Shared with the native listener: the ``ConnectionRegistry`` (one ``max_connections`` and
per-address limit for both ports, drained together at shutdown), the TLS context, and the
principal (a verified client certificate's subject, else ``User:ANONYMOUS``), and the SCRAM
login (``security/sasl_session.py``): SaslHandshake v1 and SaslAuthenticate carry the same
fields in Kafka's protocol as in tslog's, so the native session serves them unchanged; until
it succeeds only ApiVersions, SaslHandshake and SaslAuthenticate are served, anything else
closes the connection. SaslHandshake v0 (raw tokens without Kafka framing after it) is not
advertised: every client tested asks for v1.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import struct
import time

from tslog.protocol.errors import ErrorCode, RemoteProtocolError
from tslog.protocol.frames import DISCARD_VIEW, FrameReceiver, frame_prefix
from tslog.protocol.kafka import (UnsupportedKafkaVersion, decode_request, encode_response,
                                  encode_response_chunks)
from tslog.protocol.kafka.codec import API_VERSIONS
from tslog.protocol.messages import ApiKey

from ...config import BrokerConfig
from ...metrics.definitions import kafka_api_metrics
from ...metrics.observe import finish_kafka_request
from ...security.sasl_session import SaslSession
from ...security.tls import certificate_principal
from ..connection_registry import ConnectionRegistry
from .dispatch import ADVERTISED, TABLE, api_versions_body
from .request_info import KafkaRequestInfo

log = logging.getLogger("tslog.broker.kafka")

_UNSUPPORTED = int(ErrorCode.UNSUPPORTED_VERSION)
_HEADER_AND_ERROR = struct.Struct(">ih")  # response header v0 + an int16 error code
_SASL_KEYS = frozenset({int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)})


class KafkaConnection(asyncio.BufferedProtocol):
    """The asyncio protocol of one Kafka client (module docstring).

    Args:
        make_services: ``make_services(connection)`` -> the ``KafkaServices`` adapters get
            (their native handlers gated for this connection's principal).
        config: the broker's settings (frame size, in-flight and idle limits).
        registry: the broker's connections, for the limits and the shutdown drain.
    """

    def __init__(self, make_services, config: BrokerConfig, registry: ConnectionRegistry,
                 authenticator=None, table=None, advertised=None) -> None:
        self._make_services = make_services
        self.registry = registry
        self.table = TABLE if table is None else table
        self.advertised = ADVERTISED if advertised is None else advertised
        self.max_in_flight = config.max_in_flight_requests
        self.idle_s = config.connections_max_idle_ms / 1000
        self._config = config
        self.receiver = FrameReceiver(config.max_frame_bytes)
        self.peer = "?"
        self.host = "?"
        # The login: the native listener's SCRAM session as it is (it sets ``principal``
        # and ``authenticated``; without sasl_mechanisms a connection is authenticated at once).
        self._sasl = SaslSession(authenticator, self)
        self._refusal = None
        self.services = None
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future = self._loop.create_future()
        self._transport: asyncio.Transport | None = None
        self._slots: collections.deque[list] = collections.deque()
        # each slot: [cid, api key, version, frames or None, ApiMetrics, started]
        self._tasks: set[asyncio.Task] = set()
        self._closing = False
        self._draining = False  # shutdown or the client's EOF: answer what was read, close
        self._write_paused = False
        self._read_paused = False
        self._pumping = False  # answers settled meanwhile are written when pump() ends
        self._last_activity = 0.0
        self._idle_handle: asyncio.TimerHandle | None = None

    # -- transport events --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.host = peer[0] if isinstance(peer, tuple) else str(peer)
        self.principal = certificate_principal(transport, self.peer,
                                               self._config.tls_principal_mapping_rules)
        if self.principal is None:  # no tls_principal_mapping_rules rule (logged): refused
            self._closing = True
            transport.abort()
            return
        refusal = self.registry.admit(self)
        if refusal is not None:  # Kafka has no answer for "too many connections": close
            self._closing = True
            transport.abort()
            return
        self.services = self._make_services(self)
        self._sasl.start(self._loop, self.receiver)
        self._last_activity = self._loop.time()
        self._idle_handle = self._loop.call_later(self.idle_s, self._check_idle)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._closing:  # a closing connection's last bytes: dropped
            return DISCARD_VIEW
        return self.receiver.get_buffer()  # a broken stream's: dropped there

    def buffer_updated(self, nbytes: int) -> None:
        if self._closing:
            return
        self._last_activity = self._loop.time()
        self.receiver.buffer_updated(nbytes)
        self.pump()

    def eof_received(self) -> bool | None:
        """The client half-closed: answer what it sent, then close."""
        if self._slots or self.receiver.frames_waiting:
            self._draining = True
            self.pump()
            return True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self.registry.release(self)
        self._sasl.stop()
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        for task in list(self._tasks):
            task.cancel()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self.pump()

    # -- requests ----------------------------------------------------------------------------

    def pump(self) -> None:
        """Handle whole frames while no limit holds them back, then write every answer due
        in one ``writelines`` (answers settled while pumping wait for it: one send for a
        pipelining client's burst, not one per request, as the native listener does); pause
        reading otherwise."""
        if self._pumping:
            return  # the call below this one on the stack goes on from here
        receiver = self.receiver
        self._pumping = True
        try:
            while True:
                while (not self._closing and len(self._slots) < self.max_in_flight
                       and not self._write_paused):
                    try:
                        frame = receiver.next_frame()
                    except RemoteProtocolError as exc:  # an oversized frame
                        self._close_bad(str(exc) if self.authenticated else
                                        f"{exc} (sasl_server_max_receive_size: not logged in yet)")
                        return
                    if frame is None:
                        break
                    self._handle(frame)
                # Writing frees slots: then the frames held back by max_in_flight may go on.
                if not self._write_due() or not receiver.frames_waiting:
                    break
        finally:
            self._pumping = False
        if self._closing:
            return
        if self._draining and not self._slots and not receiver.frames_waiting:
            self._close()
            return
        pause = bool(receiver.frames_waiting) or len(self._slots) >= self.max_in_flight
        if pause != self._read_paused:
            self._read_paused = pause
            if pause:
                self._transport.pause_reading()
            elif not self._draining:
                self._transport.resume_reading()

    def _handle(self, frame) -> None:
        try:
            request = decode_request(frame)
        except UnsupportedKafkaVersion as exc:
            self._unsupported(exc.api_key, exc.api_version, exc.correlation_id)
            return
        except RemoteProtocolError as exc:  # KafkaDecodeError: not a Kafka request
            self._close_bad(str(exc))
            return
        except Exception:  # the codec promises only the two above: a bug, kept off the wire
            log.exception("%s: decoding a Kafka request failed", self.peer)
            self._close()
            return
        key, version, cid = request.api_key, request.api_version, request.correlation_id
        low, high = self.advertised.get(key, (1, 0))
        if not low <= version <= high:
            self._unsupported(key, version, cid)
            return
        # The slot first: a handler that ends the connection (a failed login) still has its
        # answer written before the close.
        slot = [cid, key, version, None, kafka_api_metrics(key, request.api_name),
                time.perf_counter()]
        self._slots.append(slot)
        try:
            if key in _SASL_KEYS or (not self.authenticated and key != API_VERSIONS):
                result = self._sasl.handle(ApiKey(key), request.body)  # logs a refusal
                if result is None:  # a request before the login: closed, unanswered
                    self._close()
                    return
            else:
                info = KafkaRequestInfo(request.client_id, self.host, self.principal)
                result = self.table[key](self.services, request.body, version, info)
        except Exception:
            log.exception("%s: Kafka %s v%d adapter failed", self.peer, request.api_name,
                          version)
            self._close()
            return
        if result is None:  # Produce with acks = 0: Kafka sends no response
            self._slots.pop()  # the last one: adapters are called in arrival order
            finish_kafka_request(slot[4], None, slot[5])
            return
        if type(result) is dict:
            self._settle(slot, result)
            return
        task = self._loop.create_task(result)
        self._tasks.add(task)
        task.add_done_callback(lambda task, slot=slot: self._on_done(slot, task))

    def _on_done(self, slot: list, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if self._closing or task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.error("%s: Kafka api %d adapter failed", self.peer, slot[1], exc_info=error)
            self._close()
            return
        self._settle(slot, task.result())
        self.pump()

    def _unsupported(self, api_key: int, api_version: int, correlation_id: int) -> None:
        log.info("%s: Kafka api key %d version %d is not served: UNSUPPORTED_VERSION",
                 self.peer, api_key, api_version)
        if api_key == API_VERSIONS:
            data = encode_response(API_VERSIONS, 0, correlation_id,
                                   api_versions_body(_UNSUPPORTED))
        else:
            data = _HEADER_AND_ERROR.pack(correlation_id, _UNSUPPORTED)
        self._slots.append([correlation_id, api_key, api_version, [frame_prefix(len(data)), data]])
        self._answered()

    def _settle(self, slot: list, body: dict) -> None:
        try:
            chunks = encode_response_chunks(slot[1], slot[2], slot[0], body)
        except Exception:  # an adapter built a body its version cannot hold: a bug
            log.exception("%s: the Kafka response to api %d v%d cannot be encoded", self.peer,
                          slot[1], slot[2])
            self._close()
            return
        slot[3] = [frame_prefix(sum(map(len, chunks))), *chunks]
        finish_kafka_request(slot[4], body, slot[5])
        self._answered()

    def _write_due(self) -> bool:
        """Write every answer whose turn has come (all earlier ones answered); True if any.
        Settled answers wait for a running ``pump`` to call this (``_answered``)."""
        slots = self._slots
        if self._closing:
            return False
        out = []
        while slots and slots[0][3] is not None:
            out += slots.popleft()[3]
        if not out:
            return False
        self._transport.writelines(out)
        self._last_activity = self._loop.time()
        return True

    def _answered(self) -> None:
        """An answer was settled: written now, or by the ``pump`` running below us."""
        if not self._pumping:
            self._write_due()

    # -- closing -----------------------------------------------------------------------------

    def _check_idle(self) -> None:
        if self._closing:
            return
        idle_for = self._loop.time() - self._last_activity
        if idle_for >= self.idle_s and not self._slots:
            log.info("%s: Kafka client idle for %.0f ms; closing", self.peer, idle_for * 1000)
            self._close()
            return
        delay = self.idle_s if self._slots else self.idle_s - idle_for
        self._idle_handle = self._loop.call_later(delay, self._check_idle)

    def _close_bad(self, reason: str) -> None:
        """One log line, answers due written, then close; before login, abort (a TLS close
        would read and decrypt the rest of a flood)."""
        log.warning("%s: closing Kafka connection: %s", self.peer, reason)
        self._write_due()
        self._close()
        if not self.authenticated and self._transport is not None:
            self._transport.abort()

    def _close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self.registry.release(self)  # its slot is free now, however long a TLS close takes
        self.receiver.drop_frames()
        for task in list(self._tasks):
            task.cancel()
        if self._transport is not None:
            self._transport.close()

    # -- what the registry asks of a connection ----------------------------------------------

    def refuse(self, refusal) -> None:
        """Over a limit after the fact (a SCRAM login's principal count): the login's answer
        says so (``refusal_response``), then the connection closes."""
        self._refusal = refusal

    def refusal_response(self, api_key: int) -> dict | None:
        """SaslAuthenticate's answer when the registry refused the logged-in principal."""
        if self._refusal is None:
            return None
        return {"error_code": int(self._refusal.code), "error_message": self._refusal.message,
                "auth_bytes": b"", "session_lifetime_ms": 0}

    def begin_shutdown(self) -> None:
        """Read no more requests; close once the ones read are answered."""
        if self._closing:
            return
        self._draining = True
        self.receiver.drop_frames()
        self._transport.pause_reading()
        if not self._slots:
            self._close()

    def abort(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.abort()
