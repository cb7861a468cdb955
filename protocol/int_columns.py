"""Columns of 64-bit integers as bytes: little-endian int64, eight bytes a value.

Why: an answer of a thousand partitions with 61 offsets each is 61,000 ints, and as a
msgpack list each one is encoded, decoded and schema-checked by itself on both sides of the
wire; as one ``bin`` per partition they are copied in C (OffsetsAtTimes v1,
docs/protocol.md). ``array`` does the conversion; the byte order is fixed on the wire
whatever the host's.
"""

from __future__ import annotations

import sys
from array import array

_SWAP = sys.byteorder != "little"
if array("q").itemsize != 8:  # pragma: no cover - every platform CPython supports today
    raise ImportError("array('q') is not 64 bits here")


class ColumnError(ValueError):
    """Bytes that are not a whole number of int64 values."""


def pack_int64(values: list) -> bytes:
    """``values`` (ints that fit in int64) as little-endian int64 bytes."""
    column = array("q", values)
    if _SWAP:  # pragma: no cover - big-endian hosts
        column.byteswap()
    return column.tobytes()


def unpack_int64(data) -> list:
    """The ints of ``pack_int64``'s bytes. Raises ColumnError for a length not a multiple
    of eight."""
    if len(data) % 8:
        raise ColumnError(f"{len(data)} bytes is not a whole number of int64 values")
    column = array("q")
    column.frombytes(data)
    if _SWAP:  # pragma: no cover - big-endian hosts
        column.byteswap()
    return column.tolist()
