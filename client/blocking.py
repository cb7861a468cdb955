"""One blocking connection to a broker: requests answered in order on the caller's thread.

Why a blocking twin of the asyncio connection: two callers must not pay for an event loop.
A Spark task reads a range with its own thread and no loop, and the synchronous facade
answers time lookups on the caller's thread (``_direct.py``) instead of handing each one to
the client's loop thread and back, which costs two thread wake-ups per request. It speaks
the same frames as everything else, through ``tslog.protocol``.

A request may poll for its answer (``poll_s``): zero-timeout polls of the socket for that
long at most before the blocking receive, so the thread does not halt its vCPU for an answer
due in tens of microseconds (see ``_connection.py``'s answer polling, the same idea).

A response is received into a buffer of the length its prefix announces, so that length is
capped first (``max_frame_bytes``, the asyncio connection's default): a peer announcing
4 GiB gets ``FrameTooLargeError`` and a closed socket, not a 4 GiB allocation.
"""

from __future__ import annotations

import select
import socket
import time

import numpy as np

from tslog.protocol.frames import FRAME_PREFIX, MAX_FRAME_BYTES, FrameTooLargeError
from tslog.protocol.messages import RequestHeader, decode_response, encode_request


_RECEIVE_BYTES = 64 * 1024  # one recv: a small response whole, a large one's first part


class BrokerSocket:
    """One blocking connection; responses are read in request order (as the broker sends).

    Args:
        host, port: the broker.
        timeout_s: connect timeout, and the socket timeout of every send and receive.
        client_id: sent in each request header.
        max_frame_bytes: largest response body accepted; a larger announced length closes
            the connection and raises ``FrameTooLargeError`` before anything is allocated.
    """

    def __init__(self, host: str, port: int, timeout_s: float,
                 client_id: str | None = "tslog-python", *,
                 max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self.address = (host, port)
        self.client_id = client_id
        self.max_frame_bytes = max_frame_bytes
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = 0
        self._pending: list[tuple[int, int]] = []
        self._scratch = bytearray(_RECEIVE_BYTES)
        self._received = b""  # bytes after the last response taken (pipelined answers)
        self._poller: select.poll | None = None  # made on first use of answer polling

    def send(self, api_key: int, body: dict) -> None:
        self._correlation = (self._correlation + 1) % 2**31
        frame = encode_request(RequestHeader(api_key, 0, self._correlation, self.client_id),
                               body, validate=False)  # built here, from checked arguments
        self.sock.sendall(frame)
        self._pending.append((self._correlation, api_key))

    def _recv_into(self, view: memoryview) -> int:
        """One ``recv`` into ``view``; the byte count (never 0: a closed stream raises)."""
        count = self.sock.recv_into(view)
        if count == 0:
            raise ConnectionError(f"broker {self.address[0]}:{self.address[1]} closed "
                                  "the connection")
        return count

    def _recv(self) -> bytes:
        return self._scratch[:self._recv_into(memoryview(self._scratch))]

    def _poll_readable(self, poll_s: float) -> None:
        """Spin on zero-timeout polls until the socket is readable or ``poll_s`` passed."""
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(self.sock, select.POLLIN)
        poll, clock = self._poller.poll, time.perf_counter
        deadline = clock() + poll_s
        while not poll(0) and clock() < deadline:
            pass

    def receive(self, poll_s: float = 0.0, *, record_views: bool = False,
                allocate=None) -> dict:
        """The next response. A small one usually takes a single ``recv`` (prefix and body
        together); a large one is received straight into a buffer of its exact size.

        ``record_views``: the ``records`` bins of the body are memoryviews of that buffer, not
        copies (a Spark task hands them on to Arrow), and the buffer is a fresh, unzeroed
        one per response, never reused, so the views stay valid for as long as they are held.
        ``allocate(size)`` returns that buffer (writable, contiguous), e.g. from a memory pool
        that keeps freed pages; by default it comes from numpy.

        Raises:
            FrameTooLargeError: the announced length exceeds ``max_frame_bytes``; the
                connection is closed (the stream cannot be resynchronised).
            ConnectionError: the broker closed the connection, or answered out of order.
        """
        correlation, api_key = self._pending.pop(0)
        received = self._received
        if poll_s > 0 and len(received) < FRAME_PREFIX.size:
            self._poll_readable(poll_s)
        while len(received) < FRAME_PREFIX.size:
            received += self._recv()
        (length,) = FRAME_PREFIX.unpack_from(received)
        if length > self.max_frame_bytes:
            self.close()
            raise FrameTooLargeError(length, self.max_frame_bytes)
        end = FRAME_PREFIX.size + length
        if len(received) >= end:
            frame, self._received = memoryview(received)[FRAME_PREFIX.size:end], received[end:]
        else:
            # Unzeroed when views will point into it: the recv writes every byte anyway.
            if not record_views:
                frame = bytearray(length)
            elif allocate is None:
                frame = np.empty(length, np.uint8)
            else:
                frame = allocate(length)
            got = len(received) - FRAME_PREFIX.size
            view = memoryview(frame).cast("B")
            view[:got] = memoryview(received)[FRAME_PREFIX.size:]
            while got < length:
                got += self._recv_into(view[got:])
            self._received = b""
        got_id, body = decode_response(frame, api_key, record_views=record_views)
        if got_id != correlation:
            raise ConnectionError(f"response {got_id} does not answer request {correlation}")
        return body

    def request(self, api_key: int, body: dict, poll_s: float = 0.0) -> dict:
        self.send(api_key, body)
        return self.receive(poll_s)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
