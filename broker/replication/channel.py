"""A follower's connection to a leader: one request at a time, each response received
straight into a buffer of its own size.

Why not ``asyncio.StreamReader``: a follower's fetch responses are megabytes of records, and
a stream reader copies every byte into its buffer and again out of it (``readexactly``), on
top of the kernel's copy. This ``BufferedProtocol`` reads the 4-byte length prefix, then
lets the event loop ``recv_into`` a bytearray of exactly the frame's length, so the bytes are
copied once before msgpack sees them. The broker never imports the client, so the follower
has this small channel of its own.
"""

from __future__ import annotations

import asyncio

from tslog.protocol.frames import FRAME_PREFIX, FRAME_PREFIX_SIZE
from tslog.protocol.messages import ApiKey, RequestHeader, decode_response, encode_request


class RequestInterrupted(Exception):
    """The request's answer was given up (``LeaderChannel.interrupt``); the connection is
    closed with it, since a late response could no longer be matched."""


class _FrameReceiver(asyncio.BufferedProtocol):
    """Receives length-prefixed frames into exact-size buffers; hands each to a waiter."""

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future | None = None
        self.lost: Exception | None = None
        self._prefix = bytearray(FRAME_PREFIX_SIZE)
        self._frame: bytearray | None = None  # None while the prefix is being read
        self._got = 0

    def connection_made(self, transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        target = self._prefix if self._frame is None else self._frame
        return memoryview(target)[self._got:]

    def buffer_updated(self, nbytes: int) -> None:
        self._got += nbytes
        if self._frame is None:
            if self._got < FRAME_PREFIX_SIZE:
                return
            (length,) = FRAME_PREFIX.unpack(self._prefix)
            if length > self.max_frame_bytes:
                self._fail(ConnectionError(f"response frame of {length} bytes is too large"))
                self.transport.close()
                return
            self._frame, self._got = bytearray(length), 0
            if length:
                return
        if self._got == len(self._frame):
            frame, self._frame, self._got = self._frame, None, 0
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result(frame)
            else:  # nobody asked: the stream is out of step
                self._fail(ConnectionError("unexpected response"))
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

    def __init__(self, host: str, port: int, client_id: str, max_frame_bytes: int) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.max_frame_bytes = max_frame_bytes
        self._protocol: _FrameReceiver | None = None
        self._correlation_id = 0

    async def connect(self, timeout_s: float) -> _FrameReceiver:
        """The live connection, made first if there is none (returns at once if there is)."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            _, protocol = await asyncio.wait_for(
                asyncio.get_running_loop().create_connection(
                    lambda: _FrameReceiver(self.max_frame_bytes), self.host, self.port),
                timeout_s)
            self._protocol = protocol
        return protocol

    async def request(self, api_key: ApiKey, body: dict, timeout_s: float) -> dict:
        """Send, then await the response. With a live connection the request is written
        before the first suspension, so the caller's next step costs no extra loop turn.

        Raises:
            RequestInterrupted: ``interrupt`` was called while it waited.
        """
        protocol = await self.connect(timeout_s)
        loop = asyncio.get_running_loop()
        self._correlation_id = (self._correlation_id + 1) % (2**31)
        header = RequestHeader(api_key, 0, self._correlation_id, self.client_id)
        protocol.waiter = waiter = loop.create_future()
        protocol.transport.write(encode_request(header, body, validate=False))  # built here
        async with asyncio.timeout(timeout_s):
            frame = await waiter
        correlation_id, response = decode_response(frame, api_key)
        if correlation_id != self._correlation_id:
            raise ConnectionError("response out of order")
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
