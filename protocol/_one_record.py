"""The whole broker check of a one-record batch in one ``struct`` call: the fast path a
latency-sensitive producer (linger 0) takes, since every batch it sends holds one record.

The general check (``batch_header.validate_batch_for_stamping``) is a chain of small steps:
parse the header, check it, checksum, place the records section's columns, check them. Each
step costs a Python call and a ``struct`` call of its own, and for a batch of one record
those fixed costs are nearly all the work a leader does before the write. But a one-record
batch without compression and without headers has a fixed layout up to its key and value
blobs: the 80-byte header, the section's three sizes, one CreateTime, one key length and one
value length. ``ONE_RECORD`` unpacks all of it at once, and ``first_look`` asks every
question the general path asks, of that one tuple.

It only ever says yes: a batch it does not vouch for (more records, compression, headers, or
anything wrong at all) gets no CRC, and the caller runs the general path on the header
fields the same call read, which accepts the batch or refuses it with its own error and
message. So which path ran never shows, by construction;
``tests/property/test_one_record.py`` checks that whatever this path accepts the general path
accepts with the same header and running CRC, on honest batches and on mutated ones.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

# header (17 fields), then keys_bytes, values_bytes, headers_bytes, create_time[0],
# key_length[0], value_length[0]: everything a one-record section says before its blobs.
ONE_RECORD = struct.Struct("<qiIiBBHiiqqqqqhhiIIIqii")
HEADER_FIELDS = 17
_HEADER_END = 80
_CRC_START = 16
# magic 1, attributes 0 (no compression, no headers), reserved 0, last offset delta 0,
# record count 1: fields 4 to 8 of a one-record batch the fast path may take.
_PLAIN_ONE_RECORD = (1, 0, 0, 0, 1)
_unpack = ONE_RECORD.unpack_from


def one_record_verdict(batch) -> tuple[tuple, int] | None:
    """(the header's 17 fields, the records' running CRC32C) if ``batch`` is exactly one
    valid, uncompressed one-record batch without headers; None for anything else, valid or
    not (the general path decides those). See ``first_look``."""
    fields, running = first_look(batch)
    return None if running is None else (fields, running)


def first_look(batch) -> tuple[tuple | None, int | None]:
    """(the header's 17 fields, the records' running CRC32C or None) from one ``struct``
    call: the CRC only when ``batch`` is exactly one valid, uncompressed one-record batch
    without headers, which this vouches for. The fields come back either way (None for a
    batch too short for ``ONE_RECORD``, which the general path refuses or parses itself), so
    the general path checks the header it was given instead of decoding it a second time.

    The questions are the general path's: the length field against the bytes given, magic,
    attributes, reserved fields, record count and last offset delta, the header's
    first/min/max CreateTimes against each other and against the record's, the section's
    sizes against the batch length, the key and value lengths (>= -1, -1 for null) against
    their blobs, and the CRC over the records then header bytes [16, 80).
    """
    size = len(batch)
    if size < ONE_RECORD.size:
        return None, None
    fields = _unpack(batch)
    (keys_bytes, values_bytes, headers_bytes, create_time,
     key_length, value_length) = fields[HEADER_FIELDS:]
    header = fields[:HEADER_FIELDS]
    if (fields[3] != size or fields[4:9] != _PLAIN_ONE_RECORD or fields[15] or headers_bytes
            or not fields[9] == fields[10] == fields[11] == create_time
            or ONE_RECORD.size + keys_bytes + values_bytes != size
            or (key_length != keys_bytes and (key_length != -1 or keys_bytes))
            or (value_length != values_bytes and (value_length != -1 or values_bytes))):
        return header, None
    running = crc32c(batch[_HEADER_END:])
    if crc32c(batch[_CRC_START:_HEADER_END], running) != fields[2]:
        return header, None
    return header, running
