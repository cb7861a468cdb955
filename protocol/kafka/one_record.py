"""A produced Kafka batch of one plain record, converted to its tslog batch in a few
``struct`` calls: the fast path of a producer that sends one record per batch (linger 0, or
records spread over many partitions), where the column-wise conversion's fixed numpy cost
(some thirty calls on arrays of one) was nearly all the work.

It only ever says yes: a batch it does not vouch for (more records, compression, headers,
a varint wider than the layout below, or anything wrong at all) gets None, and the caller
runs the general conversion (``convert.py``), which converts it or refuses it with its own
error. What it does convert equals the general path's result byte for byte, header and
records' CRC included (``tests/property/test_kafka_one_record.py``), so which path ran never
shows.

The record it takes: length (the rest of the batch exactly), attributes, timestamp delta,
offset delta (0), key length, key, value length, value, header count (0); each varint is
read with ``record_uvarint``, bounded by the batch's end, as the general path reads them.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from .._record_builder import Section, seal_checked
from .._record_check import SECTION_SIZES
from ..batch_header import COMPRESSION_NONE, CheckedBatch
from .errors import KafkaBatchError
from .record_batch import HEADER, MAGIC
from .record_varints import record_uvarint

_CRC_START = 21  # Kafka's CRC covers attributes onwards
_LENGTH_PREFIX = 12  # base offset and batch length: not counted in batch_length
_CODEC_MASK = 0x07
_ONE_RECORD_TAIL = struct.Struct("<qii")  # the section's CreateTime, key and value lengths
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def one_record_checked(data) -> tuple[tuple | None, tuple[int, CheckedBatch] | None]:
    """(the Kafka header's fields, then (the Kafka attributes, the tslog ``CheckedBatch``)
    if ``data`` is exactly one valid, uncompressed Kafka batch of one record without
    headers, else None: the general path decides those). The fields come back either way
    (None for bytes too short for a header), so the general path checks the header it is
    given instead of decoding it a second time."""
    size = len(data)
    if size <= HEADER.size:
        return None, None
    fields = HEADER.unpack_from(data)
    (_, length, _, magic, crc, attributes, last_offset_delta, base_timestamp, _,
     producer_id, producer_epoch, base_sequence, count) = fields
    if (magic != MAGIC or count != 1 or last_offset_delta != 0 or attributes & _CODEC_MASK
            or length + _LENGTH_PREFIX != size):
        return fields, None
    record = _one_record(data, size)
    if record is None or crc32c(data[_CRC_START:]) != crc:
        return fields, None
    delta, key, value = record
    create_time = base_timestamp + delta
    if not _INT64_MIN <= create_time <= _INT64_MAX:
        return fields, None
    parts = [SECTION_SIZES.pack(_size(key), _size(value), 0),
             _ONE_RECORD_TAIL.pack(create_time, _length(key), _length(value)),
             key or b"", value or b"", b""]
    try:
        checked = seal_checked(Section(parts, 1, create_time, create_time, create_time, False),
                               COMPRESSION_NONE, producer_id, producer_epoch, base_sequence)
    except ValueError:
        return fields, None
    return fields, (attributes, checked)


def _one_record(data, end: int) -> tuple[int, object, object] | None:
    """(timestamp delta, key, value) of the one record after the header, key and value as
    views or None for null; None unless the record fills the batch exactly, has offset
    delta 0 and no headers."""
    try:
        raw, pos = record_uvarint(data, HEADER.size, end)
        if _signed(raw) != end - pos:
            return None
        raw, pos = record_uvarint(data, pos + 1, end)  # after the record's attributes
        if raw >> 64:  # wider than the general path's 64-bit varints: it decides
            return None
        delta = _signed(raw)
        offset_delta, pos = record_uvarint(data, pos, end)
        key, pos = _blob(data, pos, end)
        value, pos = _blob(data, pos, end)
        headers, pos = record_uvarint(data, pos, end)
    except KafkaBatchError:
        return None
    if offset_delta or headers or pos != end:
        return None
    return delta, key, value


def _blob(data, pos: int, end: int) -> tuple[object, int]:
    """(a length-prefixed field as a view, or None for null, the position after it)."""
    raw, pos = record_uvarint(data, pos, end)
    length = _signed(raw)
    if length < 0:
        if length != -1:
            raise KafkaBatchError("a record's field has a negative length")
        return None, pos
    if pos + length > end:
        raise KafkaBatchError("a record's field runs past the record")
    return memoryview(data)[pos:pos + length], pos + length


def _signed(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def _size(field) -> int:
    return 0 if field is None else len(field)


def _length(field) -> int:
    return -1 if field is None else len(field)
