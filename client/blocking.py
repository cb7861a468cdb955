"""One blocking connection to a broker: requests answered in order on the caller's thread.

Why a blocking twin of the asyncio connection: two callers must not pay for an event loop.
A Spark task reads a range with its own thread and no loop, and the synchronous facade
answers time lookups on the caller's thread (``_direct.py``) instead of handing each one to
the client's loop thread and back, which costs two thread wake-ups per request. It speaks
the same frames as everything else, through ``tslog.protocol``.

A request may poll for its answer (``poll_s``): zero-timeout polls of the socket for that
long at most before the blocking receive, so the thread does not halt its vCPU for an answer
due in tens of microseconds (see ``_connection.py``'s answer polling, the same idea).

The wire itself (framing, the frame cap, correlation ids, response checks) is
``tslog.protocol.connection``: this class only moves bytes between the socket and it. The
socket receives into the connection's buffers: small responses into its reused scratch, a
large one into a buffer of the length its prefix announces, capped first (``max_frame_bytes``):
a peer announcing 4 GiB gets ``FrameTooLargeError`` and a closed socket, not a 4 GiB
allocation.
"""

from __future__ import annotations

import select
import socket
import ssl
import time

from tslog.protocol.connection import NEED_DATA, BadResponse, Connection, Role
from tslog.protocol.errors import ErrorCode, RemoteProtocolError
from tslog.protocol.frames import MAX_FRAME_BYTES, FrameTooLargeError, unzeroed_buffer
from tslog.protocol.messages import InvalidResponseError

from .errors import TooManyConnectionsError
from ._login import login_blocking
from ._tls import tls_failure_message
from .errors import TlsError
from .security import Security

_TOO_MANY_CONNECTIONS = ErrorCode.TOO_MANY_CONNECTIONS  # read per request (see ApiKey)


class BrokerSocket:
    """One blocking connection; responses are read in request order (as the broker sends).

    Args:
        host, port: the broker.
        timeout_s: the socket timeout of every send and receive (and of the connect,
            unless ``connect_timeout_s`` is given).
        client_id: sent in each request header.
        max_frame_bytes: largest response body accepted; a larger announced length closes
            the connection and raises ``FrameTooLargeError`` before anything is allocated.
        record_views: the ``records`` of responses are memoryviews of the buffer each large
            response was received into, not copies (a Spark task hands them on to Arrow).
            Those buffers are fresh per response, never reused, so the views stay valid for
            as long as they are held.
        allocate: ``allocate(size)`` makes those buffers (writable, contiguous), e.g. from a
            memory pool that keeps freed pages; by default unzeroed numpy memory with
            ``record_views`` (the socket writes every byte anyway), else ``bytearray``.
        security: TLS and SASL options; the socket is wrapped after connecting, then logs in
            when SASL is on (raising ``SaslAuthenticationFailedError`` and the like if refused).
        connect_timeout_s: how long the TCP connect may take (the owner's setting).
        ssl_context: that TLS context built once by the owner (a Spark task's many sockets),
            else made here from ``security``.

    Raises:
        TlsError: the TLS handshake failed (untrusted certificate, not a TLS listener,
            client certificate refused).
    """

    def __init__(self, host: str, port: int, timeout_s: float,
                 client_id: str | None = "tslog-python", *,
                 max_frame_bytes: int = MAX_FRAME_BYTES, record_views: bool = False,
                 allocate=None, security: Security | None = None,
                 ssl_context: ssl.SSLContext | None = None,
                 connect_timeout_s: float | None = None) -> None:
        self.address = (host, port)
        self.client_id = client_id
        self.max_frame_bytes = max_frame_bytes
        if allocate is None:
            allocate = unzeroed_buffer if record_views else bytearray
        self._connection = Connection(Role.CLIENT, max_frame_bytes=max_frame_bytes,
                                      client_id=client_id, record_views=record_views,
                                      allocate=allocate)
        self.sock = socket.create_connection(
            (host, port), timeout=timeout_s if connect_timeout_s is None else connect_timeout_s)
        self.sock.settimeout(timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is None and security is not None:
            ssl_context = security.ssl_context()
        if ssl_context is not None:
            self.sock = _wrap(self.sock, ssl_context, host, port)
        self._poller: select.poll | None = None  # made on first use of answer polling
        login_blocking(self, security)  # SCRAM, when ``security`` says SASL

    def send(self, api_key: int, body: dict) -> None:
        # Built here, from checked arguments: no schema walk on the way out.
        _, frame = self._connection.send_request(api_key, body, validate=False)
        self.sock.sendall(frame[0] if len(frame) == 1 else b"".join(frame))

    def _poll_readable(self, poll_s: float) -> None:
        """Spin on zero-timeout polls until the socket is readable or ``poll_s`` passed."""
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(self.sock, select.POLLIN)
        poll, clock = self._poller.poll, time.perf_counter
        deadline = clock() + poll_s
        while not poll(0) and clock() < deadline:
            pass

    def receive(self, poll_s: float = 0.0) -> dict:
        """The body of the next response (to the oldest request sent and not yet answered).

        Raises:
            FrameTooLargeError: the announced length exceeds ``max_frame_bytes``; the
                connection is closed (the stream cannot be resynchronised).
            InvalidResponseError: the response does not fit its API's schema.
            ConnectionError: the broker closed the connection, or answered out of order.
            TooManyConnectionsError: a connection limit of the broker refused this connection
                (the message names it); the broker closes it, and so does this.
            TlsError: the broker ended the TLS session (TLS 1.3 refuses a client certificate
                after the handshake, at the first read).
        """
        connection = self._connection
        try:
            event = connection.next_event()
            if event is NEED_DATA and poll_s > 0:
                self._poll_readable(poll_s)
            while event is NEED_DATA:
                buffer = connection.get_buffer()
                count = self.sock.recv_into(buffer)
                if count == 0:
                    raise ConnectionError(f"broker {self.address[0]}:{self.address[1]} "
                                          "closed the connection")
                connection.buffer_updated(count)
                event = connection.next_event()
            if type(event) is BadResponse:  # that answer is bad; the stream is still in step
                raise event.error
        except (FrameTooLargeError, InvalidResponseError):
            self.close()
            raise
        except RemoteProtocolError as exc:
            self.close()
            raise ConnectionError(str(exc)) from None
        except ssl.SSLError as exc:
            self.close()
            raise TlsError(tls_failure_message(*self.address, exc)) from None
        body = event.body
        if body.get("error_code") == _TOO_MANY_CONNECTIONS:
            self.close()
            raise TooManyConnectionsError(f"broker {self.address[0]}:{self.address[1]}: "
                                          f"{body.get('error_message')}")
        return body

    def request(self, api_key: int, body: dict, poll_s: float = 0.0) -> dict:
        self.send(api_key, body)
        return self.receive(poll_s)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def _wrap(sock: socket.socket, context: ssl.SSLContext, host: str, port: int) -> ssl.SSLSocket:
    """The TLS handshake on a connected socket (within its timeout); a failure closes it and
    raises ``TlsError`` naming the broker and the reason."""
    try:
        return context.wrap_socket(sock, server_hostname=host)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError, socket.timeout) as exc:
        sock.close()
        raise TlsError(tls_failure_message(host, port, exc)) from None
