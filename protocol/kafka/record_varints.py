"""The two varint reads a Kafka record section's decoders share: any varint of a record,
bounded by the record's end, and a record's length varint (the walk from record to record).
Both raise ``KafkaBatchError`` for bytes that cannot be what they should be."""

from __future__ import annotations

from .errors import KafkaBatchError


def record_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(unsigned varint, the byte after it) at ``pos``, which must end before ``end``."""
    result = shift = 0
    while True:
        if pos >= end:
            raise KafkaBatchError("truncated varint in a record")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise KafkaBatchError("varint longer than 10 bytes in a record")


def record_length_at(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """(record length, first byte after the length varint) of the record at ``pos``."""
    if pos >= end:
        raise KafkaBatchError("a record runs past the end of the batch")
    raw = buf[pos]
    if raw < 0x80:
        pos += 1
    elif pos + 1 < end and buf[pos + 1] < 0x80:  # records of 64..8191 bytes
        raw = (raw & 0x7F) | (buf[pos + 1] << 7)
        pos += 2
    else:
        raw, pos = record_uvarint(buf, pos, end)
    size = (raw >> 1) ^ -(raw & 1)
    if size < 6 or pos + size > end:
        raise KafkaBatchError(f"record length {size} does not fit the batch")
    return size, pos
