"""Length-prefixed framing: the only thing that stands between a TCP byte stream and messages.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of body (a msgpack
message one layer up). Framing is split out from the messages so the connection code can cut
the stream without understanding it, and so the size limit is enforced before a single byte of
an oversized body is buffered: a peer announcing 4 GiB must cost us four bytes, not 4 GiB.

Theory of operation of ``FrameReceiver``: the owner lets the socket write into the buffer
``get_buffer()`` offers and reports ``buffer_updated(n)`` (or hands bytes to ``receive_data``,
which copies them into the same buffers). Small frames arrive many per read in one reused
64 KiB scratch buffer and each is copied out once, as ``bytes`` (callers may keep them
forever). A frame too large for the scratch gets a buffer of exactly its size (``allocate``),
the bytes already received are moved into it and the socket writes the rest there directly,
so its bytes are copied at most once in user space. The receiver never sees a socket.
"""

from __future__ import annotations

import collections
import struct

import numpy as np

from .errors import ErrorCode, LocalProtocolError, RemoteProtocolError

FRAME_PREFIX = struct.Struct(">I")
FRAME_PREFIX_SIZE = FRAME_PREFIX.size  # 4
MAX_FRAME_BYTES = 64 * 1024 * 1024  # default cap on one frame's body
SCRATCH_BYTES = 64 * 1024  # the reused receive buffer of small frames
_LENGTH_LIMIT = 0xFFFFFFFF  # what 4 bytes can express
# Where bytes go that nobody will read: those after a broken stream, or a shell's last ones
# before its close. Shared by every connection, as nothing ever reads it.
DISCARD_VIEW = memoryview(bytearray(64 * 1024))


class FrameTooLargeError(RemoteProtocolError):
    """The peer announced a frame body larger than this decoder accepts."""

    def __init__(self, length: int, max_frame_bytes: int) -> None:
        super().__init__(
            f"frame of {length} bytes exceeds the {max_frame_bytes}-byte limit",
            ErrorCode.MESSAGE_TOO_LARGE,
        )
        self.length = length
        self.max_frame_bytes = max_frame_bytes


def unzeroed_buffer(size: int) -> np.ndarray:
    """A buffer for one received frame, not zeroed first: the socket writes every byte of
    it before anything reads it, and zeroing a 1 MB buffer costs as much as a copy."""
    return np.empty(size, np.uint8)


def frame_prefix(body_length: int) -> bytes:
    """Return the 4-byte prefix for a body of ``body_length`` bytes (for ``writelines``).

    Raises:
        LocalProtocolError: the length is negative or does not fit in 4 bytes.
    """
    if not 0 <= body_length <= _LENGTH_LIMIT:
        raise LocalProtocolError(
            f"frame body of {body_length} bytes cannot be framed", ErrorCode.MESSAGE_TOO_LARGE
        )
    return FRAME_PREFIX.pack(body_length)


def encode_frame(body) -> bytes:
    """Return prefix + body as one ``bytes`` (one copy of the body).

    For large bodies prefer ``transport.writelines([frame_prefix(len(body)), body])``, which
    skips the copy.

    Raises:
        LocalProtocolError: the body does not fit in a frame.
    """
    return frame_prefix(len(body)) + body


class FrameReceiver:
    """Length-prefixed frames out of a byte stream, received in place where it pays.

    Args:
        max_frame_bytes: largest body accepted; a larger announced length breaks the stream
            as soon as its prefix is seen, before any allocation (see below).
        allocate: ``allocate(size)`` returns a writable, contiguous buffer for one large frame
            (default ``bytearray``); it is never reused, so views into a frame stay valid.

    After an oversized frame the stream is out of step for good: ``next_frame`` raises
    ``FrameTooLargeError`` once the frames cut before it are handed out, and every later byte
    is dropped (``get_buffer`` offers a discard buffer: asyncio treats a raising
    ``get_buffer`` as a fatal transport error and logs it).
    """

    __slots__ = ("_allocate", "_body", "_end", "_got", "_scratch", "_scratch_view", "_start",
                 "error", "frames", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES, *, allocate=bytearray,
                 scratch_bytes: int = SCRATCH_BYTES) -> None:
        if scratch_bytes <= FRAME_PREFIX_SIZE:
            raise ValueError("the scratch buffer must hold more than a length prefix")
        if not 0 <= max_frame_bytes <= _LENGTH_LIMIT:
            raise ValueError(f"max_frame_bytes must be in [0, {_LENGTH_LIMIT}]")
        self.max_frame_bytes = max_frame_bytes
        self._allocate = allocate
        # Not zeroed: every byte is written by a receive before it is read, and an idle
        # connection's scratch then costs address space, not memory.
        self._scratch = np.empty(scratch_bytes, np.uint8)
        # Frames are cut through a view: slicing the bytearray itself would copy twice.
        self._scratch_view = memoryview(self._scratch)
        self._start = 0  # first byte of the scratch not yet cut into a frame
        self._end = 0  # end of the bytes received into the scratch
        self._body: memoryview | None = None  # a large frame being received in place
        self._got = 0  # bytes of ``_body`` received
        # Whole frames, oldest first. Public so an owner on a per-request path may pop from
        # the left itself (``Connection.next_event``); ``next_frame`` does the same.
        self.frames: collections.deque = collections.deque()
        # Set once the stream broke (an oversized frame): ``next_frame`` raises it once the
        # frames cut before it are handed out. Public and read-only for owners, which ask
        # after every request whether anything but a frame is pending (no property call).
        self.error: FrameTooLargeError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet handed out as part of a frame."""
        return self._end - self._start + self._got

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next received bytes go (for ``recv_into``, or as a ``BufferedProtocol``'s
        own ``get_buffer``: a shell binds it, so a read costs no call of the shell's).
        ``sizehint`` is asyncio's, and unused: the receiver knows what the stream needs."""
        if self.error is not None:
            return DISCARD_VIEW
        if self._body is not None:
            return self._body[self._got:]
        if not self._end:  # the usual: every frame cut, the whole scratch free (no new view)
            return self._scratch_view
        scratch = self._scratch
        if self._start and len(scratch) - self._end < len(scratch) // 4:
            # A partial frame sits near the end: move it to the front (at most 64 KiB).
            pending = self._end - self._start
            scratch[:pending] = scratch[self._start:self._end]
            self._start, self._end = 0, pending
        return self._scratch_view[self._end:]

    def buffer_updated(self, count: int) -> None:
        """``count`` bytes were written at the start of the last ``get_buffer()``: cut the
        whole frames among them (one call per read, so the cutting is not a call of its own)."""
        if self.error is not None:
            return  # written to DISCARD_VIEW: dropped
        if self._body is not None:
            self._got += count
            if self._got == len(self._body):
                self.frames.append(self._body.obj)
                self._body, self._got = None, 0
            return
        view = self._scratch_view
        if not self._end and count >= FRAME_PREFIX_SIZE:
            # The usual read of a request-response exchange: the scratch was empty and holds
            # exactly one whole frame now. Cut it without the general loop's bookkeeping.
            (length,) = FRAME_PREFIX.unpack_from(view)
            if length + FRAME_PREFIX_SIZE == count and length <= self.max_frame_bytes:
                self.frames.append(bytes(view[FRAME_PREFIX_SIZE:count]))
                return
        self._end += count
        scratch = self._scratch
        position, end = self._start, self._end
        unpack_from, append = FRAME_PREFIX.unpack_from, self.frames.append
        max_frame_bytes = self.max_frame_bytes
        while end - position >= FRAME_PREFIX_SIZE:
            (length,) = unpack_from(view, position)  # a memoryview reads faster than numpy
            if length > max_frame_bytes:
                self.error = FrameTooLargeError(length, max_frame_bytes)
                self._start = self._end = 0
                return  # frames already cut are still handed out; then the error
            body_start = position + FRAME_PREFIX_SIZE
            if end - body_start >= length:
                append(bytes(view[body_start:body_start + length]))
                position = body_start + length
                continue
            if length > len(scratch) - FRAME_PREFIX_SIZE:  # never fits: receive it in place
                body = memoryview(self._allocate(length)).cast("B")
                have = end - body_start
                body[:have] = view[body_start:end]
                self._body, self._got = body, have
                position = end
            break
        if position == end:
            self._start = self._end = 0
        else:
            self._start = position

    def receive_data(self, data) -> None:
        """Copy ``data`` in (for owners that receive ``bytes`` rather than into a buffer)."""
        view = memoryview(data).cast("B")
        position = 0
        while position < len(view):
            buffer = self.get_buffer()
            count = min(len(buffer), len(view) - position)
            buffer[:count] = view[position:position + count]
            position += count
            self.buffer_updated(count)

    @property
    def frames_waiting(self) -> int:
        """Whole frames received and not yet handed out."""
        return len(self.frames)

    def drop_frames(self) -> None:
        """Forget the whole frames not handed out yet (an owner that stops serving)."""
        self.frames.clear()

    def feed(self, data) -> list:
        """``receive_data`` then every whole frame: for owners that take frames in bulk.

        Raises:
            FrameTooLargeError: a length prefix exceeds ``max_frame_bytes``. Frames completed
                earlier in the same call are lost with it; the connection is unusable anyway.
        """
        self.receive_data(data)
        frames = list(self.frames)
        self.frames.clear()
        if self.error is not None:
            raise self.error
        return frames

    def feed_eof(self) -> None:
        """The stream ended; raise if it ended inside a frame.

        Raises:
            RemoteProtocolError: bytes of an unfinished frame are still buffered.
        """
        if self.buffered_bytes:
            raise RemoteProtocolError(
                f"connection closed inside a frame ({self.buffered_bytes} bytes pending)",
                ErrorCode.INVALID_REQUEST,
            )

    def next_frame(self):
        """The next whole frame body (``bytes``, or the buffer ``allocate`` made), or None."""
        if self.frames:
            return self.frames.popleft()
        if self.error is not None:
            raise self.error
        return None
