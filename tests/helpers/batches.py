"""Batches that lie about their records, as a hostile or buggy producer would send them.

Each keeps a valid CRC: the CRC proves the bytes arrived as sent, so only the checks of the
records section against the header (``check_records``) can tell these from good batches.
"""

from __future__ import annotations

import struct

import zstandard

from tslog.protocol.batch_header import (
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    HEADER_STRUCT,
    compute_crc,
    parse_header,
)
from tslog.protocol.records import build_batch

FIVE_VALUES = [b"one", b"two", b"three", b"four", b"five"]
INT32_MAX = 2**31 - 1


def reseal(batch) -> bytes:
    """``batch`` with its batch_length set to its size and its CRC recomputed."""
    batch = bytearray(batch)
    struct.pack_into("<i", batch, 16, len(batch))
    struct.pack_into("<I", batch, 12, compute_crc(batch))
    return bytes(batch)


def with_header(batch, **fields) -> bytes:
    """``batch`` with header fields replaced (by BatchHeader name), CRC recomputed."""
    header = parse_header(batch)._replace(**fields)
    return reseal(HEADER_STRUCT.pack(*header) + bytes(batch[HEADER_SIZE:]))


def with_section(batch, section: bytes) -> bytes:
    """``batch``'s header over another records section, length and CRC recomputed."""
    return reseal(bytes(batch[:HEADER_SIZE]) + section)


def five_records(**kwargs) -> bytes:
    return build_batch(FIVE_VALUES, create_times=1_700_000_000_000, **kwargs)


def issue_lie() -> bytes:
    """Issue 20's batch: five records whose header claims 2^31 - 1 of them."""
    return with_header(five_records(), record_count=INT32_MAX, last_offset_delta=INT32_MAX - 1)


def one_too_many() -> bytes:
    """Five records, a header that counts six."""
    return with_header(five_records(), record_count=6, last_offset_delta=5)


def sizes_disagree() -> bytes:
    """keys_bytes says 4 (there are no keys): the three sizes no longer add up to the length."""
    batch = bytearray(five_records())
    struct.pack_into("<I", batch, HEADER_SIZE, 4)
    return reseal(batch)


def trailing_bytes() -> bytes:
    """A consistent header and section followed by bytes the sizes do not account for."""
    return reseal(five_records() + b"\x00" * 8)


def zstd_flag_over_plain_bytes() -> bytes:
    """The compression flag set over a section that is not zstd."""
    batch = five_records()
    return with_header(batch, attributes=parse_header(batch).attributes | COMPRESSION_ZSTD)


def zstd_bomb(uncompressed_bytes: int, *, declare_size: bool = True) -> bytes:
    """A zstd batch whose section inflates to ``uncompressed_bytes`` of zeros."""
    compressor = zstandard.ZstdCompressor(write_content_size=declare_size)
    section = compressor.compress(b"\x00" * uncompressed_bytes)
    return with_section(five_records(compression=COMPRESSION_ZSTD), section)


LIES = {
    "record_count_2^31-1": issue_lie,
    "record_count_6_for_5": one_too_many,
    "section_sizes_disagree": sizes_disagree,
    "trailing_bytes": trailing_bytes,
    "zstd_flag_over_plain_bytes": zstd_flag_over_plain_bytes,
}
