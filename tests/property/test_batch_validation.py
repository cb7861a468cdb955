"""Hypothesis: whatever batch the broker accepts, every consumer reads every record of it.

Goal (issue 20): a CRC proves the bytes arrived as sent, not that they make sense, so the
broker's check (``validate_batch``: header, CRC and ``check_records``) must refuse every batch
a consumer could not read. Method: build a valid batch of any shape, then lie in it the ways a
buggy or hostile producer could (any byte, any header field, any byte of a zstd batch's
uncompressed section, bytes added or removed) and recompute the CRC so the lie is not caught
for free. Then either the validator refuses with BatchFormatError (nothing else may escape), or
both consumer decoders, the protocol's and the client's, read every record the header counts.
"""

from __future__ import annotations

import struct

import zstandard
from hypothesis import given, note
from hypothesis import strategies as st

from tests.property.test_protocol_codecs import batch_inputs
from tslog.client._fetcher import decode_batch
from tslog.client._types import TopicPartition
from tslog.protocol.batch_header import (
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    HEADER_STRUCT,
    BatchFormatError,
    BatchHeader,
    compute_crc,
    parse_header,
    stamp,
    validate_batch,
)
from tslog.protocol.records import build_batch, iter_records

TP = TopicPartition("t", 0)
NO_DESERIALIZE = (None, None)
# What each header field may be set to: anything its struct format can hold.
_RANGES = {"q": 63, "i": 31, "I": None, "B": None, "H": None, "h": 15}
_FORMATS = HEADER_STRUCT.format.lstrip("<")


def _field_values(code: str):
    if code == "I":
        return st.integers(0, 2**32 - 1)
    if code == "B":
        return st.integers(0, 255)
    if code == "H":
        return st.integers(0, 2**16 - 1)
    bits = _RANGES[code]
    small = st.integers(-3, 1100)  # near the true counts and sizes, where lies are subtle
    return st.one_of(small, st.integers(-(2**bits), 2**bits - 1))


def reseal_crc(batch: bytearray) -> bytes:
    """Recompute the CRC only: a lying batch_length stays a lie."""
    struct.pack_into("<I", batch, 12, compute_crc(batch))
    return bytes(batch)


@st.composite
def lying_batches(draw):
    batch = bytearray(build_batch(**draw(batch_inputs())))
    how = draw(st.sampled_from(["byte", "field", "section", "resize"]))
    note(f"mutation: {how}")
    if how == "byte":
        position = draw(st.integers(0, len(batch) - 1))
        batch[position] = draw(st.integers(0, 255))
    elif how == "field":
        index = draw(st.integers(0, len(BatchHeader._fields) - 1))
        header = list(parse_header(batch))
        header[index] = draw(_field_values(_FORMATS[index]))
        note(f"{BatchHeader._fields[index]} = {header[index]}")
        batch[:HEADER_SIZE] = HEADER_STRUCT.pack(*header)
    elif how == "section":
        batch = _mutate_section(draw, batch)
    else:
        position = draw(st.integers(HEADER_SIZE, len(batch)))
        if draw(st.booleans()) or position == len(batch):
            batch[position:position] = draw(st.binary(min_size=1, max_size=16))
        else:
            del batch[position:position + draw(st.integers(1, 16))]
        if draw(st.booleans()):  # keep batch_length honest about the new size
            struct.pack_into("<i", batch, 16, len(batch))
    return reseal_crc(batch)


def _mutate_section(draw, batch: bytearray) -> bytearray:
    """Change one byte of the uncompressed section; a zstd batch is recompressed after, so
    the lie reaches the section checks instead of failing in zstd."""
    header = parse_header(batch)
    compressed = header.compression == COMPRESSION_ZSTD
    section = bytearray(_raw_section(batch, compressed))
    position = draw(st.integers(0, len(section) - 1))
    section[position] = draw(st.integers(0, 255))
    if compressed:
        section = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(section))
    rebuilt = batch[:HEADER_SIZE] + section
    struct.pack_into("<i", rebuilt, 16, len(rebuilt))
    return rebuilt


def _raw_section(batch, compressed: bool) -> bytes:
    section = bytes(batch[HEADER_SIZE:])
    if compressed:
        return zstandard.ZstdDecompressor().decompress(section)
    return section


def assert_refused_or_readable(batch: bytes) -> None:
    try:
        header = validate_batch(batch)
    except BatchFormatError:
        return
    # Accepted: as a leader would store it, every consumer must read every record.
    stored = bytearray(batch)
    stamp(stored, 1_000, 0, 1_700_000_000_000)
    records = list(iter_records(stored))
    assert [record.offset for record in records] == list(range(1_000, 1_000 + header.record_count))
    consumed = decode_batch(TP, bytes(stored), 0, NO_DESERIALIZE)
    assert len(consumed) == header.record_count
    assert [record.value for record in consumed] == [record.value for record in records]


@given(lying_batches())
def test_a_batch_is_refused_or_every_record_of_it_is_read(batch):
    assert_refused_or_readable(batch)


@given(batch_inputs(), st.integers(1, 2**31 - 1))
def test_any_record_count_but_the_true_one_is_refused(inputs, count):
    batch = bytearray(build_batch(**inputs))
    true_count = parse_header(batch).record_count
    struct.pack_into("<ii", batch, 24, count - 1, count)
    reseal_crc(batch)
    if count == true_count:
        validate_batch(bytes(batch))
    else:
        try:
            validate_batch(bytes(batch))
        except BatchFormatError:
            return
        raise AssertionError(f"{count} records claimed over {true_count} accepted")


@given(batch_inputs())
def test_every_honest_batch_is_accepted_and_read(inputs):
    batch = build_batch(**inputs)
    assert validate_batch(batch).record_count == len(inputs["values"])
    assert_refused_or_readable(batch)
