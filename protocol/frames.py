"""Length-prefixed framing: the only thing that stands between a TCP byte stream and messages.

A frame is a 4-byte big-endian unsigned length followed by that many bytes of body (a msgpack
message one layer up). Framing is split out from the messages so the connection code can cut
the stream without understanding it, and so the size limit is enforced before a single byte of
an oversized body is buffered: a peer announcing 4 GiB must cost us four bytes, not 4 GiB.

Theory of operation of ``FrameDecoder``: received bytes are appended to one ``bytearray`` and
parsed from a read position. Whole frames are copied out as ``bytes`` (callers may keep them
forever, and a live ``memoryview`` would pin the buffer against resizing). Consumed bytes are
dropped from the front once per ``feed`` call; CPython deletes a bytearray prefix by moving
its start pointer, so a large frame arriving in many small chunks costs linear time, not
quadratic. The decoder never sees a socket: the owner feeds it whatever ``data_received`` got.
"""

from __future__ import annotations

import struct

from .errors import ErrorCode, LocalProtocolError, RemoteProtocolError

FRAME_PREFIX = struct.Struct(">I")
FRAME_PREFIX_SIZE = FRAME_PREFIX.size  # 4
MAX_FRAME_BYTES = 64 * 1024 * 1024  # default cap on one frame's body
_LENGTH_LIMIT = 0xFFFFFFFF  # what 4 bytes can express


class FrameTooLargeError(RemoteProtocolError):
    """The peer announced a frame body larger than this decoder accepts."""

    def __init__(self, length: int, max_frame_bytes: int) -> None:
        super().__init__(
            f"frame of {length} bytes exceeds the {max_frame_bytes}-byte limit",
            ErrorCode.MESSAGE_TOO_LARGE,
        )
        self.length = length
        self.max_frame_bytes = max_frame_bytes


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


class FrameDecoder:
    """Incremental frame parser: feed it stream bytes, get whole frame bodies back.

    Args:
        max_frame_bytes: largest body accepted. A larger announced length raises
            ``FrameTooLargeError`` as soon as its 4-byte prefix has arrived.

    After a ``FrameTooLargeError`` the stream is out of sync for good: every later ``feed``
    raises the same error, and the owner should close the connection.
    """

    __slots__ = ("_buffer", "_error", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        if not 0 <= max_frame_bytes <= _LENGTH_LIMIT:
            raise ValueError(f"max_frame_bytes must be in [0, {_LENGTH_LIMIT}]")
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._error: FrameTooLargeError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as a frame (a partial frame)."""
        return len(self._buffer)

    def feed(self, data) -> list[bytes]:
        """Add received bytes; return every frame body completed by them, in order.

        Args:
            data: any bytes-like object, of any length (``b""`` is allowed and returns ``[]``).

        Returns:
            The bodies of the frames completed, possibly empty.

        Raises:
            FrameTooLargeError: a length prefix exceeds ``max_frame_bytes``. Frames completed
                earlier in the same call are lost with it; the connection is unusable anyway.
        """
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        buffer += data
        end = len(buffer)
        position = 0
        frames: list[bytes] = []
        unpack_from = FRAME_PREFIX.unpack_from
        with memoryview(buffer) as view:
            while end - position >= FRAME_PREFIX_SIZE:
                (length,) = unpack_from(view, position)
                if length > self.max_frame_bytes:
                    self._error = FrameTooLargeError(length, self.max_frame_bytes)
                    break
                start = position + FRAME_PREFIX_SIZE
                if end - start < length:
                    break
                position = start + length
                frames.append(bytes(view[start:position]))
        if self._error is not None:
            buffer.clear()
            raise self._error
        if position:
            del buffer[:position]
        return frames

    def feed_eof(self) -> None:
        """Tell the decoder the stream ended; raise if it ended inside a frame.

        Raises:
            RemoteProtocolError: bytes of an unfinished frame are still buffered.
        """
        if self._buffer:
            raise RemoteProtocolError(
                f"connection closed inside a frame ({len(self._buffer)} bytes pending)",
                ErrorCode.INVALID_REQUEST,
            )
