"""Answers whose msgpack bytes are put together from pieces packed earlier and kept.

Why: a Metadata answer for every topic of a broker with ten thousand partitions is ten
thousand partition maps, and packing them took as long as everything else the request
does. Those maps change only when a topic or a partition's leader changes, so the broker
packs a topic's partition list once and keeps the bytes. msgpack lets packed items be
concatenated: an array is its header (which holds the item count) followed by its items'
bytes, and a map is its header followed by each key's and value's bytes, so a kept piece
can be spliced into an answer as it is.

``spliced(head, key, packed_value)`` packs ``head`` (a map whose last key is ``key``,
holding ``[]``) and puts ``packed_value`` where that empty array was. ``packed_array``
makes an array of already-packed items. A ``PackedAnswer`` is an answer body (a ``dict``,
for whoever reads it in process: the metrics, tests) carrying its own ``packed`` bytes,
which a codec sends instead of packing the body again. The bytes are exactly
``pack(body)``'s (tests compare them), so a peer cannot tell the difference.
"""

from __future__ import annotations

import struct

from .frames import frame_prefix
from .packing import pack

_EMPTY_ARRAY = b"\x90"
_ARRAY16 = struct.Struct(">BH")
_ARRAY32 = struct.Struct(">BI")


class PackedAnswer(dict):
    """An answer body and ``packed``: its msgpack bytes, byte for byte ``pack(self)``.

    The body is an ordinary dict (a connection counts its error codes, a test compares it);
    whoever builds one keeps the two in step: it is never changed after it is made."""

    __slots__ = ("packed",)

    def __init__(self, body: dict, packed: bytes) -> None:
        super().__init__(body)
        self.packed = packed


def array_header(count: int) -> bytes:
    """The header msgpack writes before ``count`` array items (fixarray, array 16, 32)."""
    if count < 16:
        return bytes((0x90 | count,))
    if count < 0x10000:
        return _ARRAY16.pack(0xDC, count)
    return _ARRAY32.pack(0xDD, count)


def packed_array(items: list[bytes]) -> bytes:
    """``pack([a, b, ...])`` from ``[pack(a), pack(b), ...]``."""
    return array_header(len(items)) + b"".join(items)


def spliced(head: dict, key: str, packed_value: bytes) -> bytes:
    """``pack(head)`` with ``head[key]`` packed as ``packed_value`` instead.

    ``key`` must be ``head``'s last key and hold an empty list (packed as the one byte
    0x90, which ``packed_value`` replaces): a map is packed in its keys' order."""
    if next(reversed(head)) != key or head[key] != []:
        raise ValueError(f"{key!r} must be the map's last key and hold []")
    return pack(head)[:-1] + packed_value


def response_frame(correlation_id: int, answer: PackedAnswer) -> list:
    """The frame ``messages.encode_response(correlation_id, answer)`` returns, as buffers
    (``[prefix and envelope, answer.packed]``): the kept bytes are sent, not copied.

    Raises:
        LocalProtocolError: the frame would be over the 4-byte length limit.
    """
    envelope = b"\x92" + pack(correlation_id)  # [correlation_id, body]
    return [frame_prefix(len(envelope) + len(answer.packed)) + envelope, answer.packed]
