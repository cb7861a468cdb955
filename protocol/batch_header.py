"""The fixed header of a record batch: layout, parsing, stamping, checksum.

A record batch is stored on disk and sent on the wire as the same bytes: an 80-byte
little-endian header followed by the records section (see ``records.py`` and
``docs/storage-format.md``). The broker only ever reads and patches this header; it never
decodes records on the produce or fetch path, so everything the broker needs to decide
(offsets, times, sizes, checksum) lives here and is read with one ``struct`` call. Before a
batch gets offsets, though, ``validate_batch`` also checks that its records section agrees with
this header (``check_records``: column-wise, constant Python work per batch), because a
consumer can read nothing past a batch it cannot decode.

Layout (offsets in bytes, all integers little-endian)::

     0  int64   base_offset        assigned by the partition leader; 0 from a producer
     8  int32   leader_epoch       stamped by the leader; -1 from a producer
    12  uint32  crc                CRC32C of the records, then of bytes [16, 80)
    16  int32   batch_length       total bytes of the batch, header included
    20  uint8   magic              FORMAT_MAGIC (1)
    21  uint8   attributes         bits 0-1 compression, bit 2 has-headers
    22  uint16  reserved           0
    24  int32   last_offset_delta  record_count - 1
    28  int32   record_count       >= 1
    32  int64   first_create_time  CreateTime of the first record (ms)
    40  int64   min_create_time    smallest CreateTime in the batch (ms)
    48  int64   max_create_time    largest CreateTime in the batch (ms)
    56  int64   log_append_time    LogAppendTime (ms), NO_TIMESTAMP until the leader stamps it
    64  int64   producer_id        -1 when not idempotent
    72  int16   producer_epoch     -1 when not idempotent
    74  int16   reserved           0
    76  int32   base_sequence      -1 when not idempotent
    80  ...     records

Why the CRC sits where it does: base offset and leader epoch are assigned by the leader and
checked by continuity, so they stay outside the checksum; the LogAppendTime is inside it, so
followers and recovery verify exactly what the leader wrote.

Why the records are fed to the CRC before the header fields: the leader must both verify the
producer's CRC and compute a new one after stamping LogAppendTime. With the records first,
both CRCs continue from one running value over the records (``records_crc``): the records are
read once (the dear part, with ``crc32c``) and each header costs a 64-byte CRC.
The coverage is the same bytes as a CRC over ``[16, batch_length)``; only their order differs.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

from ._one_record import first_look
from ._record_check import MAX_UNCOMPRESSED_BYTES, check_section, inflate
from .errors import BatchFormatError

HEADER_STRUCT = struct.Struct("<qiIiBBHiiqqqqqhhi")
HEADER_SIZE = HEADER_STRUCT.size  # 80
FORMAT_MAGIC = 1
NO_TIMESTAMP = -1

CRC_START = 16  # first byte covered by the CRC
_CRC = struct.Struct("<I")
_LENGTH = struct.Struct("<i")
_LENGTH_POSITION = 16

COMPRESSION_MASK = 0b11
COMPRESSION_NONE = 0
COMPRESSION_ZSTD = 1
ATTR_HAS_HEADERS = 0b100
_KNOWN_ATTRIBUTES = COMPRESSION_MASK | ATTR_HAS_HEADERS


class BatchHeader(NamedTuple):
    """The decoded header of one batch; field order is the on-disk order."""

    base_offset: int
    leader_epoch: int
    crc: int
    batch_length: int
    magic: int
    attributes: int
    reserved: int
    last_offset_delta: int
    record_count: int
    first_create_time: int
    min_create_time: int
    max_create_time: int
    log_append_time: int
    producer_id: int
    producer_epoch: int
    reserved2: int
    base_sequence: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.record_count

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def has_headers(self) -> bool:
        return bool(self.attributes & ATTR_HAS_HEADERS)


class CheckedBatch(NamedTuple):
    """One whole batch with what its validation found: its header, parsed once, and its
    records' running CRC32C (``records_crc``). What travels with a batch from the check to
    the log, which stamps it from these (``stamped``) without reading the bytes again."""

    data: object  # bytes-like, exactly ``header.batch_length`` bytes
    header: BatchHeader
    records_crc: int


def parse_header(buffer, position: int = 0) -> BatchHeader:
    """Decode the header at ``position`` without checking it (see ``check_header``).

    ``tuple.__new__`` is what ``BatchHeader._make`` calls, without its Python frame: this
    runs several times per batch on every path.
    """
    return _new_tuple(BatchHeader, HEADER_STRUCT.unpack_from(buffer, position))


_new_tuple = tuple.__new__


def peek_length(buffer, position: int = 0) -> int:
    """Return the batch length field alone: what a scanner needs to hop to the next batch."""
    return _LENGTH.unpack_from(buffer, position + _LENGTH_POSITION)[0]


_RECORD_COUNT = struct.Struct("<i")
_RECORD_COUNT_POSITION = 28


def peek_record_count(buffer, position: int = 0) -> int:
    """Return the record count field alone, unchecked: what a reader needs to choose how to
    decode a batch before it decodes it (the decoder checks it)."""
    return _RECORD_COUNT.unpack_from(buffer, position + _RECORD_COUNT_POSITION)[0]


# The header split where the CRC starts: what the leader assigns (base offset, leader epoch)
# and the CRC itself, then the fields [16, 80) the CRC covers (``stamped_header``).
_UNCOVERED = struct.Struct("<qiI")  # base_offset, leader_epoch, crc: bytes [0, 16)
_COVERED = struct.Struct("<iBBHiiqqqqqhhi")  # batch_length to base_sequence: bytes [16, 80)
_FIRST_COVERED = BatchHeader._fields.index("batch_length")
_LOG_APPEND_TIME = BatchHeader._fields.index("log_append_time")

_MAX_CREATE_TIME = struct.Struct("<q")
_MAX_CREATE_TIME_POSITION = struct.calcsize("<qiIiBBHiiqq")  # fields before max_create_time
_LENGTH_AND_COUNT = struct.Struct("<i8xi")  # batch_length, then record_count 8 bytes on


def newest_create_time(batches) -> int:
    """The largest CreateTime in whole, checked batches stored back to back: one hop per
    batch, nothing decoded (the end-to-end latency metric's CreateTime)."""
    newest = _MAX_CREATE_TIME.unpack_from(batches, _MAX_CREATE_TIME_POSITION)[0]
    position = peek_length(batches)
    end = len(batches) - HEADER_SIZE
    while position <= end:
        newest = max(newest, _MAX_CREATE_TIME.unpack_from(
            batches, position + _MAX_CREATE_TIME_POSITION)[0])
        length = peek_length(batches, position)
        if length < HEADER_SIZE:
            break
        position += length
    return newest


def count_records(batches) -> int:
    """Records in whole batches stored back to back (a Fetch's ``records``): one hop per batch
    on its length field, nothing decoded. Stops at a length too small to be a batch."""
    total = 0
    position = 0
    end = len(batches) - HEADER_SIZE
    unpack = _LENGTH_AND_COUNT.unpack_from
    while position <= end:
        length, count = unpack(batches, position + _LENGTH_POSITION)
        if length < HEADER_SIZE:
            break
        total += count
        position += length
    return total


def check_header(header: BatchHeader, available: int | None = None) -> None:
    """Raise BatchFormatError unless the header is self-consistent.

    ``available`` is how many bytes the caller holds from the batch start; a batch claiming
    more is torn or garbage.
    """
    if header.magic != FORMAT_MAGIC:
        raise BatchFormatError(f"unknown batch magic {header.magic}")
    if header.batch_length < HEADER_SIZE:
        raise BatchFormatError(f"batch length {header.batch_length} below header size")
    if available is not None and header.batch_length > available:
        raise BatchFormatError(
            f"batch length {header.batch_length} exceeds the {available} bytes present"
        )
    if (header.attributes & ~_KNOWN_ATTRIBUTES
            or header.attributes & COMPRESSION_MASK > COMPRESSION_ZSTD):
        raise BatchFormatError(f"unknown batch attributes {header.attributes:#x}")
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        raise BatchFormatError(
            f"record count {header.record_count} and last offset delta "
            f"{header.last_offset_delta} disagree"
        )
    if not header.min_create_time <= header.first_create_time <= header.max_create_time:
        raise BatchFormatError("create times out of order in batch header")
    if header.reserved or header.reserved2:
        raise BatchFormatError("reserved header fields are not zero")


def checked_header(view) -> BatchHeader:
    """The header of ``view``, which must be exactly one batch: ``validate_batch``'s header
    checks, without the CRC or the records."""
    if len(view) < HEADER_SIZE:
        raise BatchFormatError(f"{len(view)} bytes is shorter than a batch header")
    header = parse_header(view)
    check_header(header, len(view))
    if header.batch_length != len(view):
        raise BatchFormatError(f"batch length field {header.batch_length} != {len(view)} bytes")
    return header


def records_crc(batch) -> int:
    """The running CRC32C over the records section alone: the part both CRCs share."""
    with memoryview(batch) as view, view[HEADER_SIZE:] as records:
        return crc32c(records)


def crc_with_header(header_bytes, records_crc_value: int) -> int:
    """Finish a batch CRC: continue ``records_crc_value`` over header bytes [16, 80)."""
    with memoryview(header_bytes) as view, view[CRC_START:HEADER_SIZE] as fields:
        return crc32c(fields, records_crc_value)


def compute_crc(batch) -> int:
    """CRC32C of everything after base offset, leader epoch and the CRC field itself
    (records first, then header bytes [16, 80))."""
    return crc_with_header(batch, records_crc(batch))


def verify_crc(batch, header: BatchHeader | None = None) -> None:
    """Raise BatchFormatError if the stored CRC does not match the bytes."""
    stored = _CRC.unpack_from(batch, 12)[0] if header is None else header.crc
    if compute_crc(batch) != stored:
        raise BatchFormatError("batch CRC mismatch")


def check_records(batch, header: BatchHeader) -> None:
    """Raise CorruptRecordsError unless a reader can decode every record of ``batch``.

    ``header`` is ``batch``'s own, already checked (``check_header``) and covering exactly
    ``len(batch)`` bytes. A zstd section is inflated (bounded by ``MAX_UNCOMPRESSED_BYTES``),
    then the section is checked column-wise against the header (``_record_check.py``).
    Constant Python work per batch; the C-level work (numpy, or ``struct`` for a batch of a
    few records, and msgpack) grows with the records.
    """
    section = memoryview(batch).cast("B")[HEADER_SIZE:]
    if header.attributes & COMPRESSION_MASK == COMPRESSION_ZSTD:
        section = inflate(section, MAX_UNCOMPRESSED_BYTES)
    check_section(section, header, unpack_headers=False)  # checked, not kept


def validate_batch(batch) -> BatchHeader:
    """Full check of one complete batch held in ``batch``: header consistency, CRC, and
    that every record can be decoded (``check_records``)."""
    return validate_batch_for_stamping(batch)[0]


def validate_batch_for_stamping(batch) -> tuple[BatchHeader, int]:
    """``validate_batch`` that also returns the records' running CRC, so a leader can stamp
    the batch (``stamped_header``) without reading the records a second time.

    Every path that takes a batch into a log (leader, follower, recovery) runs this, so a
    batch no consumer could read is refused (CORRUPT_MESSAGE) before it gets an offset.
    A plain one-record batch is vouched for by ``first_look`` in one ``struct`` call;
    anything it does not vouch for takes the steps below (``_one_record.py``), with the
    header fields that call read: the header is decoded once either way.
    """
    fields, running = first_look(batch)
    if running is not None:
        return _new_tuple(BatchHeader, fields), running
    if fields is not None:
        header = _new_tuple(BatchHeader, fields)
    elif len(batch) < HEADER_SIZE:
        raise BatchFormatError(f"{len(batch)} bytes is shorter than a batch header")
    else:
        header = parse_header(batch)
    check_header(header, len(batch))
    if header.batch_length != len(batch):
        raise BatchFormatError(
            f"batch length field {header.batch_length} != {len(batch)} bytes given"
        )
    running = records_crc(batch)
    if crc_with_header(batch, running) != header.crc:
        raise BatchFormatError("batch CRC mismatch")
    check_records(batch, header)
    return header, running


def stamp(batch: bytearray, base_offset: int, leader_epoch: int, log_append_time: int) -> None:
    """Assign offset, epoch and LogAppendTime in place and recompute the CRC (leader only)."""
    batch[:HEADER_SIZE] = stamped_header(
        batch, parse_header(batch), base_offset, leader_epoch, log_append_time
    )


def stamped_header(
    batch,
    header: BatchHeader,
    base_offset: int,
    leader_epoch: int,
    log_append_time: int,
    records_crc_value: int | None = None,
) -> bytes:
    """The header ``batch`` gets from its leader, CRC included, without copying the batch.

    The leader writes this header followed by ``batch[HEADER_SIZE:]`` (one ``pwritev``).
    Given the ``records_crc_value`` that validation computed, the records are not read again.
    Built as the CRC sees it: the covered fields [16, 80) are packed once, the CRC continues
    over them, and the three uncovered ones go in front (no copy, no patching in place).
    """
    if records_crc_value is None:
        records_crc_value = records_crc(memoryview(batch)[: header.batch_length])
    covered = _COVERED.pack(*header[_FIRST_COVERED:_LOG_APPEND_TIME], log_append_time,
                            *header[_LOG_APPEND_TIME + 1:])
    return _UNCOVERED.pack(base_offset, leader_epoch, crc32c(covered, records_crc_value)) + covered


def stamped(batch, batch_header: BatchHeader, base_offset: int, leader_epoch: int,
            log_append_time: int, records_crc_value: int) -> tuple[bytes, BatchHeader]:
    """``stamped_header``'s bytes for a validated batch, with the header they encode: the
    header a leader appends travels on as this tuple, never parsed from bytes again.

    The covered bytes are the batch's own with the LAT's eight spliced in: two slices and
    one small pack, where packing every field again would convert fourteen ints."""
    covered = b"".join((batch[CRC_START:_LOG_APPEND_TIME_POSITION], _LAT.pack(log_append_time),
                        batch[_LOG_APPEND_TIME_POSITION + 8:HEADER_SIZE]))
    crc = crc32c(covered, records_crc_value)
    return (_UNCOVERED.pack(base_offset, leader_epoch, crc) + covered,
            _new_tuple(BatchHeader, (base_offset, leader_epoch, crc,
                                     *batch_header[_FIRST_COVERED:_LOG_APPEND_TIME],
                                     log_append_time, *batch_header[_LOG_APPEND_TIME + 1:])))


_LAT = struct.Struct("<q")
_LOG_APPEND_TIME_POSITION = struct.calcsize("<qiIiBBHiiqqq")  # fields before the LAT: 56


def pack_header(header: BatchHeader) -> bytes:
    """Encode a header; the caller fills in the CRC afterwards with ``compute_crc``."""
    return HEADER_STRUCT.pack(*header)
