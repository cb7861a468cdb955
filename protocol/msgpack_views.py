"""msgpack decoding that leaves large ``bin`` values in the received buffer.

Why: a Fetch response (or a Produce request) is almost all ``records`` bins. ``msgpack.unpackb``
copies every bin into a new ``bytes``; for an 8 MiB response that is an 8 MiB allocation, its
page faults and a memcpy, on the path that hands records to Spark or to the log. msgpack-python
has no zero-copy mode, so this module walks the message itself and returns each bin of at least
``min_view_bytes`` as a ``memoryview`` slice of the input (smaller bins are copied: a view costs
more than a short copy). The caller keeps the input unmodified while views are alive.

The walk is Python per msgpack *item*, not per record: a Fetch response for one partition is
about twenty items whatever its size, which is why callers use it only for the messages that
carry records and keep ``msgpack.unpackb`` (C) for everything else.

It accepts exactly what ``messages._unpack`` accepts, with the same results (bins aside):
``raw=False``, map keys must be str or bytes, lengths bounded by the input, ext types only
with an empty payload (``max_ext_len=0``), nothing after the top-level object. Any other input
raises ``MsgpackViewError`` (a ``ValueError``), whatever the bytes. The one difference: nesting
deeper than ``MAX_DEPTH`` is refused here (msgpack allows 1024 levels), since no message of
ours nests past five and a recursion limit must not be the peer's to reach. ``tests/property/test_msgpack_views.py``
checks both against ``msgpack.unpackb`` as the oracle.
"""

from __future__ import annotations

import struct

import msgpack

MIN_VIEW_BYTES = 4096
MAX_DEPTH = 64  # our messages nest 5 deep; a hostile peer gets an error, not a RecursionError

_U16 = struct.Struct(">H").unpack_from
_U32 = struct.Struct(">I").unpack_from
_U64 = struct.Struct(">Q").unpack_from
_I8 = struct.Struct(">b").unpack_from
_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_I64 = struct.Struct(">q").unpack_from
_F32 = struct.Struct(">f").unpack_from
_F64 = struct.Struct(">d").unpack_from

# Fixed-width scalars: first byte -> (width, unpack).
_SCALARS = {
    0xCA: (4, _F32), 0xCB: (8, _F64),
    0xCC: (1, None), 0xCD: (2, _U16), 0xCE: (4, _U32), 0xCF: (8, _U64),
    0xD0: (1, _I8), 0xD1: (2, _I16), 0xD2: (4, _I32), 0xD3: (8, _I64),
}
# Length-prefixed items: first byte -> (kind, width of the length field).
_SIZED = {
    0xC4: ("bin", 1), 0xC5: ("bin", 2), 0xC6: ("bin", 4),
    0xC7: ("ext", 1), 0xC8: ("ext", 2), 0xC9: ("ext", 4),
    0xD9: ("str", 1), 0xDA: ("str", 2), 0xDB: ("str", 4),
    0xDC: ("array", 2), 0xDD: ("array", 4),
    0xDE: ("map", 2), 0xDF: ("map", 4),
}
_FIXEXT = frozenset(range(0xD4, 0xD9))  # fixext 1..16: payload > 0 bytes, always refused


class MsgpackViewError(ValueError):
    """The input is not one msgpack object this decoder (and ``messages._unpack``) accepts."""


def unpack_with_views(data, min_view_bytes: int = MIN_VIEW_BYTES):
    """Decode one msgpack object; bins of ``min_view_bytes`` or more come back as views.

    Args:
        data: a contiguous bytes-like object (``bytes``, ``bytearray``, a memoryview, a numpy
            buffer) holding exactly one msgpack object.

    Raises:
        MsgpackViewError: anything but exactly one acceptable object.
    """
    view = memoryview(data)
    if not view.contiguous:
        raise MsgpackViewError("input is not a contiguous buffer")
    view = view.cast("B")
    walker = _Walker(view, min_view_bytes)
    try:
        value = walker.value(0)
    except (IndexError, struct.error):
        raise MsgpackViewError("input ends inside an object") from None
    except UnicodeDecodeError:
        raise MsgpackViewError("a str is not valid UTF-8") from None
    if walker.position != len(view):
        raise MsgpackViewError(f"{len(view) - walker.position} bytes after the object")
    return value


class _Walker:
    __slots__ = ("min_view_bytes", "position", "view")

    def __init__(self, view: memoryview, min_view_bytes: int) -> None:
        self.view = view
        self.position = 0
        self.min_view_bytes = min_view_bytes

    def _take(self, length: int) -> memoryview:
        start = self.position
        end = start + length
        if end > len(self.view):
            raise MsgpackViewError(f"a {length}-byte item runs past the end of the input")
        self.position = end
        return self.view[start:end]

    def _count(self, width: int) -> int:
        start = self.position
        if start + width > len(self.view):
            raise MsgpackViewError("input ends inside a length field")
        self.position = start + width
        if width == 1:
            return self.view[start]
        return (_U16 if width == 2 else _U32)(self.view, start)[0]

    def value(self, depth: int):
        if depth > MAX_DEPTH:
            raise MsgpackViewError(f"nesting deeper than {MAX_DEPTH}")
        view = self.view
        first = view[self.position]
        self.position += 1
        if first <= 0x7F:
            return first
        if first >= 0xE0:
            return first - 0x100
        if first <= 0x8F:
            return self._map(first & 0x0F, depth)
        if first <= 0x9F:
            return self._array(first & 0x0F, depth)
        if first <= 0xBF:
            return str(self._take(first & 0x1F), "utf-8")
        if first == 0xC0:
            return None
        if first == 0xC2:
            return False
        if first == 0xC3:
            return True
        scalar = _SCALARS.get(first)
        if scalar is not None:
            width, unpack = scalar
            raw = self._take(width)
            return raw[0] if unpack is None else unpack(raw)[0]
        sized = _SIZED.get(first)
        if sized is not None:
            kind, width = sized
            length = self._count(width)
            if kind == "bin":
                raw = self._take(length)
                return raw if length >= self.min_view_bytes else bytes(raw)
            if kind == "str":
                return str(self._take(length), "utf-8")
            if kind == "array":
                return self._array(length, depth)
            if kind == "map":
                return self._map(length, depth)
            # ext: only an empty payload fits max_ext_len=0
            code = self._take(1)[0]
            if length:
                raise MsgpackViewError(f"ext payload of {length} bytes is not accepted")
            return msgpack.ExtType(code - 0x100 if code >= 0x80 else code, b"")
        if first in _FIXEXT:
            raise MsgpackViewError("ext types are not accepted")
        raise MsgpackViewError(f"byte {first:#04x} starts no msgpack object")

    def _array(self, length: int, depth: int) -> list:
        if length > len(self.view) - self.position:  # every item takes a byte at least
            raise MsgpackViewError(f"array of {length} items cannot fit the input")
        item = self.value
        return [item(depth + 1) for _ in range(length)]

    def _map(self, length: int, depth: int) -> dict:
        if 2 * length > len(self.view) - self.position:
            raise MsgpackViewError(f"map of {length} entries cannot fit the input")
        result = {}
        item = self.value
        for _ in range(length):
            key = item(depth + 1)
            if type(key) is memoryview:  # a long bin key: keys must be hashable bytes
                key = bytes(key)
            if type(key) is not str and type(key) is not bytes:
                raise MsgpackViewError(f"map key of type {type(key).__name__} is not allowed")
            result[key] = item(depth + 1)
        return result
