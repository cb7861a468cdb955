"""Kafka's wire primitives: fixed-width integers, varints, strings, bytes, arrays, uuids and
the tagged-field section of flexible versions.

Why readers return ``(value, position)``: a message is decoded in one pass over one ``bytes``
object with no reader object in between, which is the cheapest shape CPython offers (one call
and one tuple per field). Every reader checks that the bytes it needs are there, so a truncated
or lying length raises ``KafkaDecodeError``, never an ``IndexError`` or a short slice silently
taken as a value. Writers append to a ``bytearray``; given a ``ChunkWriter`` (a bytearray
too), the bytes and records writers keep a large value by reference instead, so a Fetch
response's megabyte of records goes to the socket as it is, not copied into the message.

Readers accept ``bytes`` or a ``memoryview``: the codec decodes from a view, so ``bytes``
and ``records`` fields come out as views of the message (no copy of a 1 MB batch); they
compare equal to ``bytes`` and are valid while the message's buffer is.

Names follow Kafka's schema types: ``string`` is int16-length-prefixed, ``compact_string`` is
unsigned-varint (length + 1) prefixed, and so on (see Kafka's protocol guide).
"""

from __future__ import annotations

import struct
import uuid

from .errors import KafkaDecodeError

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
ZERO_UUID = uuid.UUID(int=0)


def _fixed(st: struct.Struct, name: str):
    unpack_from, size, pack = st.unpack_from, st.size, st.pack

    def read(buf: bytes, pos: int):
        if pos + size > len(buf):
            raise KafkaDecodeError(f"truncated {name} at byte {pos}")
        return unpack_from(buf, pos)[0], pos + size

    def write(out: bytearray, value) -> None:
        try:
            out += pack(value)
        except struct.error as exc:
            raise ValueError(f"{name} out of range: {value!r}") from exc

    return read, write


read_int8, write_int8 = _fixed(_I8, "int8")
read_int16, write_int16 = _fixed(_I16, "int16")
read_uint16, write_uint16 = _fixed(_U16, "uint16")
read_int32, write_int32 = _fixed(_I32, "int32")
read_uint32, write_uint32 = _fixed(_U32, "uint32")
read_int64, write_int64 = _fixed(_I64, "int64")
read_float64, write_float64 = _fixed(_F64, "float64")


def read_bool(buf: bytes, pos: int):
    if pos >= len(buf):
        raise KafkaDecodeError(f"truncated bool at byte {pos}")
    return buf[pos] != 0, pos + 1


def write_bool(out: bytearray, value) -> None:
    out.append(1 if value else 0)


def read_uvarint(buf: bytes, pos: int, max_bits: int = 35):
    """An unsigned LEB128 varint of at most ``max_bits`` (35 for a 32-bit value: 5 bytes)."""
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise KafkaDecodeError(f"truncated varint at byte {pos}")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= max_bits:
            raise KafkaDecodeError(f"varint longer than {max_bits} bits at byte {pos}")


def uvarint_width(value: int) -> int:
    """How many bytes ``value`` (>= 0) takes as an unsigned varint."""
    width = 1
    while value >= 0x80:
        value >>= 7
        width += 1
    return width


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot be negative: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: bytes, pos: int):
    """A zigzag-encoded signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos, 35)
    if raw >= 1 << 32:
        raise KafkaDecodeError("varint out of the int32 range")
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    if not -(1 << 31) <= value < 1 << 31:
        raise ValueError(f"varint out of the int32 range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def read_varlong(buf: bytes, pos: int):
    """A zigzag-encoded signed 64-bit varint."""
    raw, pos = read_uvarint(buf, pos, 70)
    if raw >= 1 << 64:
        raise KafkaDecodeError("varlong out of the int64 range")
    return (raw >> 1) ^ -(raw & 1), pos


def write_varlong(out: bytearray, value: int) -> None:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"varlong out of the int64 range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _take(buf: bytes, pos: int, length: int, what: str):
    end = pos + length
    if end > len(buf):
        raise KafkaDecodeError(f"{what} of {length} bytes at byte {pos} runs past the end")
    return buf[pos:end], end


def _text(raw: bytes) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise KafkaDecodeError(f"string is not UTF-8: {exc}") from None


def read_nullable_string(buf: bytes, pos: int):
    length, pos = read_int16(buf, pos)
    if length < 0:
        if length != -1:
            raise KafkaDecodeError(f"negative string length {length}")
        return None, pos
    raw, pos = _take(buf, pos, length, "string")
    return _text(raw), pos


def read_string(buf: bytes, pos: int):
    value, pos = read_nullable_string(buf, pos)
    if value is None:
        raise KafkaDecodeError(f"null string in a non-nullable field at byte {pos}")
    return value, pos


def write_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError("string longer than 32767 bytes")
    out += _I16.pack(len(raw))
    out += raw


write_string = write_nullable_string


def read_compact_nullable_string(buf: bytes, pos: int):
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    raw, pos = _take(buf, pos, length - 1, "compact string")
    return _text(raw), pos


def read_compact_string(buf: bytes, pos: int):
    value, pos = read_compact_nullable_string(buf, pos)
    if value is None:
        raise KafkaDecodeError(f"null compact string in a non-nullable field at byte {pos}")
    return value, pos


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out.append(0)
        return
    raw = value.encode("utf-8")
    write_uvarint(out, len(raw) + 1)
    out += raw


write_compact_string = write_compact_nullable_string


def read_nullable_bytes(buf: bytes, pos: int):
    length, pos = read_int32(buf, pos)
    if length < 0:
        if length != -1:
            raise KafkaDecodeError(f"negative bytes length {length}")
        return None, pos
    return _take(buf, pos, length, "bytes")


def read_bytes(buf: bytes, pos: int):
    value, pos = read_nullable_bytes(buf, pos)
    if value is None:
        raise KafkaDecodeError(f"null bytes in a non-nullable field at byte {pos}")
    return value, pos


BY_REFERENCE_BYTES = 64 << 10  # smaller values are cheaper to copy than to hand over


class ChunkWriter(bytearray):
    """A message being written as chunks: the bytes written so far, plus large ``bytes``
    values kept by reference (``take``) between them; ``chunks()`` lists them in order."""

    __slots__ = ("_chunks",)

    def __init__(self) -> None:
        super().__init__()
        self._chunks: list = []

    def take(self, value: bytes) -> None:
        self._chunks.append(bytes(self))
        self.clear()
        self._chunks.append(value)

    def chunks(self) -> list:
        return [*self._chunks, bytes(self)]


def _append_blob(out: bytearray, value) -> None:
    if type(out) is ChunkWriter and type(value) is bytes and len(value) >= BY_REFERENCE_BYTES:
        out.take(value)
    else:
        out += value


def write_nullable_bytes(out: bytearray, value) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += _I32.pack(len(value))
    _append_blob(out, value)


write_bytes = write_nullable_bytes


def read_compact_nullable_bytes(buf: bytes, pos: int):
    length, pos = read_uvarint(buf, pos)
    if length == 0:
        return None, pos
    return _take(buf, pos, length - 1, "compact bytes")


def read_compact_bytes(buf: bytes, pos: int):
    value, pos = read_compact_nullable_bytes(buf, pos)
    if value is None:
        raise KafkaDecodeError(f"null compact bytes in a non-nullable field at byte {pos}")
    return value, pos


def write_compact_nullable_bytes(out: bytearray, value) -> None:
    if value is None:
        out.append(0)
        return
    write_uvarint(out, len(value) + 1)
    _append_blob(out, value)


write_compact_bytes = write_compact_nullable_bytes


def read_uuid(buf: bytes, pos: int):
    raw, pos = _take(buf, pos, 16, "uuid")
    return uuid.UUID(bytes=bytes(raw)), pos


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


def read_array_length(buf: bytes, pos: int, compact: bool):
    """An array's element count, or None for a null array. A count larger than the bytes left
    is refused here: every element takes at least one byte, so it cannot be honest, and
    refusing it early keeps a lying count from allocating or looping."""
    if compact:
        raw, pos = read_uvarint(buf, pos)
        count = raw - 1
    else:
        count, pos = read_int32(buf, pos)
    if count < 0:
        if count != -1:
            raise KafkaDecodeError(f"negative array length {count}")
        return None, pos
    if count > len(buf) - pos:
        raise KafkaDecodeError(f"array of {count} elements in {len(buf) - pos} bytes")
    return count, pos


def write_array_length(out: bytearray, count: int | None, compact: bool) -> None:
    if compact:
        write_uvarint(out, 0 if count is None else count + 1)
    else:
        out += _I32.pack(-1 if count is None else count)


def read_tagged_fields(buf: bytes, pos: int):
    """The tagged-field section: ``{tag: raw bytes}`` in wire order (tags ascending)."""
    count, pos = read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise KafkaDecodeError(f"{count} tagged fields in {len(buf) - pos} bytes")
    fields = {}
    previous = -1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        if tag <= previous:
            raise KafkaDecodeError(f"tagged field {tag} out of order or repeated")
        previous = tag
        size, pos = read_uvarint(buf, pos)
        fields[tag], pos = _take(buf, pos, size, "tagged field")
    return fields, pos


def write_tagged_fields(out: bytearray, fields: dict[int, bytes]) -> None:
    write_uvarint(out, len(fields))
    for tag in sorted(fields):
        raw = fields[tag]
        write_uvarint(out, tag)
        write_uvarint(out, len(raw))
        out += raw
