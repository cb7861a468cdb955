"""A follower's connection to a leader: one request at a time, each response received
straight into a buffer of its own size.

Why not ``asyncio.StreamReader``: a follower's fetch responses are megabytes of records, and
a stream reader copies every byte into its buffer and again out of it (``readexactly``), on
top of the kernel's copy. This ``BufferedProtocol`` lets the event loop ``recv_into`` the
buffers of the sans-I/O ``tslog.protocol.connection.Connection`` (a large frame gets one of
exactly its length), which also does the framing, the cap and the correlation check, as it
does for every other connection. The broker never imports the client, so the follower has
this small shell of its own. When the listeners speak TLS it dials with the broker's peer
context (``broker.security.tls.peer_context``): the leader's certificate verified, this
broker's own presented.

With SASL on, a new connection first logs in (``login``: a factory of the sans-I/O
``tslog.protocol.sasl.ScramLogin`` with the broker's ``inter_broker_sasl_*`` credentials);
a refused login is a ``ConnectionError`` the fetcher retries after its backoff.
"""

from __future__ import annotations

import asyncio
import ssl as ssl_module
from typing import Callable

from tslog.protocol.connection import NEED_DATA, BadResponse, Connection, Role
from tslog.protocol.errors import ProtocolError
from tslog.protocol.frames import DISCARD_VIEW
from tslog.protocol.messages import ApiKey
from tslog.protocol.sasl import SaslFailure, ScramLogin


class RequestInterrupted(Exception):
    """The request's answer was given up (``LeaderChannel.interrupt``); the connection is
    closed with it, since a late response could no longer be matched."""


class _LeaderProtocol(asyncio.BufferedProtocol):
    """Moves bytes between the socket and the protocol core; hands each response to a waiter."""

    def __init__(self, client_id: str, max_frame_bytes: int) -> None:
        self.wire = Connection(Role.CLIENT, max_frame_bytes=max_frame_bytes,
                               client_id=client_id)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future | None = None
        self.lost: Exception | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.lost is not None:
            return DISCARD_VIEW  # bytes after a failure: dropped
        return self.wire.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self.lost is not None:
            return
        try:
            self.wire.buffer_updated(nbytes)
            while (event := self.wire.next_event()) is not NEED_DATA:
                if self.waiter is None or self.waiter.done():
                    raise ConnectionError("unexpected response")  # the stream is out of step
                self.waiter.set_result(event)
        except (ProtocolError, ConnectionError) as exc:
            self._fail(ConnectionError(f"response stream from the leader: {exc}"))
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection to the leader lost: {exc or 'closed'}"))

    def _fail(self, error: Exception) -> None:
        if self.lost is None:
            self.lost = error
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)


class LeaderChannel:
    """One connection to a leader: request, then await its response (no pipelining)."""

    def __init__(self, host: str, port: int, client_id: str, max_frame_bytes: int,
                 login: Callable[[], ScramLogin] | None = None, *,
                 ssl: ssl_module.SSLContext | None = None) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.ssl = ssl  # the broker's peer context when its listener speaks TLS
        self.max_frame_bytes = max_frame_bytes
        self.login = login
        self._protocol: _LeaderProtocol | None = None

    async def connect(self, timeout_s: float) -> _LeaderProtocol:
        """The live connection, made first if there is none (returns at once if there is)."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            _, protocol = await asyncio.wait_for(
                asyncio.get_running_loop().create_connection(
                    lambda: _LeaderProtocol(self.client_id, self.max_frame_bytes),
                    self.host, self.port, ssl=self.ssl,
                    server_hostname=self.host if self.ssl is not None else None),
                timeout_s)
            if self.login is not None:
                await self._log_in(protocol, self.login(), timeout_s)
            self._protocol = protocol
        return protocol

    async def _log_in(self, protocol: _LeaderProtocol, login: ScramLogin,
                      timeout_s: float) -> None:
        """The SCRAM exchange, one request at a time; ConnectionError if refused."""
        try:
            api_key, body = login.first()
            while api_key is not None:
                protocol.waiter = waiter = asyncio.get_running_loop().create_future()
                _, frame = protocol.wire.send_request(api_key, body)
                protocol.transport.writelines(frame)
                async with asyncio.timeout(timeout_s):
                    event = await waiter
                if type(event) is BadResponse:
                    raise event.error
                api_key, body = login.answer(event.body)
        except SaslFailure as failure:
            protocol.transport.close()
            raise ConnectionError(f"login at the leader {self.host}:{self.port} refused: "
                                  f"{failure}") from None
        except BaseException:
            protocol.transport.close()
            raise

    async def request(self, api_key: ApiKey, body: dict, timeout_s: float) -> dict:
        """Send, then await the response. With a live connection the request is written
        before the first suspension, so the caller's next step costs no extra loop turn.

        Raises:
            RequestInterrupted: ``interrupt`` was called while it waited.
        """
        protocol = await self.connect(timeout_s)
        protocol.waiter = waiter = asyncio.get_running_loop().create_future()
        _, frame = protocol.wire.send_request(api_key, body, validate=False)  # built here
        protocol.transport.writelines(frame)
        async with asyncio.timeout(timeout_s):
            event = await waiter
        if type(event) is BadResponse:
            raise event.error
        response = event.body
        if "topics" not in response:
            raise ConnectionError(f"leader answered {api_key.name} with {response}")
        return response

    def interrupt(self) -> None:
        """Give up the request in flight (a long poll that must end now): it raises
        ``RequestInterrupted`` and the connection closes; the next request reconnects."""
        protocol = self._protocol
        if protocol is not None and protocol.waiter is not None and not protocol.waiter.done():
            protocol.waiter.set_exception(RequestInterrupted("request interrupted"))
            self.close()

    def close(self) -> None:
        if self._protocol is not None:
            self._protocol.transport.close()
        self._protocol = None
