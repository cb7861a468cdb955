"""Hypothesis: the scalar column check (small batches) and the numpy one (the rest) accept and
refuse exactly the same batches, with the same error and message.

Goal (issue 37, small batches): a batch of up to ``SCALAR_MAX_RECORDS`` records is checked
without numpy; which path ran must never show. Method: build a valid batch of 1 to 80 records
(both sides of the threshold), then lie in it where the column checks look (the record count,
the section's three sizes, one CreateTime, one key or value length, lengths moved between
records or turned null, the headers blob, any byte of the section) and reseal the CRC so the
lie is not caught for free. Then the whole broker check, ``validate_batch_for_stamping``, runs
once with every batch sent the scalar way and once with every batch sent the numpy way: both
must accept (the same header and running CRC) or both refuse with the same exception type and
message. The two column functions are also compared directly on the same mutated sections.
"""

from __future__ import annotations

import contextlib
import struct

import msgpack
import zstandard
from hypothesis import given, note
from hypothesis import strategies as st

from tests.property.test_batch_validation import reseal_crc
from tslog.protocol import _column_check
from tslog.protocol._column_check import (
    COLUMNS_START,
    check_columns_scalar,
    check_columns_vectorised,
)
from tslog.protocol.batch_header import (
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    BatchFormatError,
    parse_header,
    validate_batch_for_stamping,
)
from tslog.protocol.records import build_batch

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
UINT32 = st.integers(0, 2**32 - 1)
NEAR = st.integers(-3, 3)
maybe_bytes = st.one_of(st.none(), st.binary(max_size=12))
header_pairs = st.lists(st.tuples(st.text(max_size=4), st.binary(max_size=4)), max_size=2)
MUTATIONS = ["none", "count", "sizes", "create_time", "header_times", "length", "move",
             "null", "headers", "byte"]


@st.composite
def valid_batches(draw) -> bytes:
    n = draw(st.one_of(st.integers(1, 4), st.integers(1, 80)))
    values = draw(st.lists(maybe_bytes, min_size=n, max_size=n))
    keys = draw(st.one_of(st.none(), st.lists(maybe_bytes, min_size=n, max_size=n)))
    create_times = draw(st.one_of(st.none(), st.lists(INT64, min_size=n, max_size=n),
                                  st.lists(st.integers(0, 2**42), min_size=n, max_size=n)))
    headers = draw(st.one_of(st.none(), st.lists(st.one_of(st.none(), header_pairs),
                                                 min_size=n, max_size=n)))
    compression = draw(st.sampled_from([COMPRESSION_NONE, COMPRESSION_NONE, COMPRESSION_ZSTD]))
    return build_batch(values, keys=keys, create_times=create_times, headers=headers,
                       compression=compression, default_create_time=1_700_000_000_000)


@st.composite
def mutated_batches(draw) -> bytes:
    """A valid batch with one lie told where the column checks look, CRC resealed."""
    batch = bytearray(draw(valid_batches()))
    header = parse_header(batch)
    compressed = header.compression == COMPRESSION_ZSTD
    section = bytearray(batch[HEADER_SIZE:])
    if compressed:
        section = bytearray(zstandard.ZstdDecompressor().decompress(bytes(section)))
    how = draw(st.sampled_from(MUTATIONS))
    note(f"mutation: {how}, {header.record_count} records")
    fields = list(header)
    if how in ("count", "header_times"):
        _lie_in_header(draw, how, fields, header)
    elif how != "none":
        section = _lie_in_section(draw, how, section, header.record_count)
    if compressed:
        section = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(section))
    rebuilt = bytearray(struct.pack("<qiIiBBHiiqqqqqhhi", *fields)) + section
    if draw(st.booleans()) or how in ("count", "sizes"):
        struct.pack_into("<i", rebuilt, 16, len(rebuilt))  # the length field tells the truth
    return reseal_crc(rebuilt)


def _lie_in_header(draw, how: str, fields: list, header) -> None:
    names = type(header)._fields
    if how == "count":
        count = draw(st.one_of(st.integers(1, header.record_count + 3),
                               st.integers(1, 2**31 - 1)))
        fields[names.index("record_count")] = count
        fields[names.index("last_offset_delta")] = count - 1
        return
    name = draw(st.sampled_from(["first_create_time", "min_create_time", "max_create_time"]))
    fields[names.index(name)] = draw(st.one_of(
        st.builds(lambda delta: getattr(header, name) + delta, NEAR), INT64))
    # keep min <= first <= max half the time, so the header checks let the lie through
    if draw(st.booleans()):
        first, low, high = (fields[names.index(f)] for f in
                            ("first_create_time", "min_create_time", "max_create_time"))
        fields[names.index("min_create_time")] = max(min(low, first), -(2**63))
        fields[names.index("max_create_time")] = min(max(high, first), 2**63 - 1)


def _lie_in_section(draw, how: str, section: bytearray, n: int) -> bytearray:
    key_column, value_column = COLUMNS_START + 8 * n, COLUMNS_START + 12 * n
    if how == "sizes":
        which = draw(st.integers(0, 2))
        old = struct.unpack_from("<I", section, 4 * which)[0]
        new = draw(st.one_of(st.builds(lambda d: max(0, old + d), NEAR), UINT32))
        struct.pack_into("<I", section, 4 * which, new)
        if draw(st.booleans()):  # and the blob really is that long, if it can be
            size = len(section) + new - old
            section = section[:size] if new < old else section + bytes(new - old)[:1 << 16]
    elif how == "create_time":
        index = draw(st.integers(0, n - 1))
        old = struct.unpack_from("<q", section, COLUMNS_START + 8 * index)[0]
        new = draw(st.one_of(st.builds(lambda d: old + d, NEAR), INT64))
        struct.pack_into("<q", section, COLUMNS_START + 8 * index,
                         min(max(new, -(2**63)), 2**63 - 1))
    elif how == "length":
        column = draw(st.sampled_from([key_column, value_column]))
        index = draw(st.integers(0, n - 1))
        value = draw(st.one_of(st.integers(-3, 50), INT32, st.sampled_from([-(2**31), 2**31 - 1])))
        struct.pack_into("<i", section, column + 4 * index, value)
    elif how in ("move", "null"):
        _move_length(draw, how, section, draw(st.sampled_from([key_column, value_column])), n)
    elif how == "headers":
        section = _lie_in_headers(draw, section, n)
    else:
        position = draw(st.integers(0, len(section) - 1))
        section[position] = draw(st.integers(0, 255))
    return section


def _move_length(draw, how: str, section: bytearray, column: int, n: int) -> None:
    """Subtle lies that keep a column's sum: bytes moved from one record to another, or a
    record made null (its bytes given to another, or not)."""
    lengths = list(struct.unpack_from(f"<{n}i", section, column))
    source, target = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
    if how == "move":
        amount = draw(st.integers(-3, max(0, lengths[source]) + 3))
        lengths[source] -= amount
        lengths[target] += amount
    else:
        given_away = max(0, lengths[source])
        lengths[source] = -1
        if draw(st.booleans()):
            lengths[target] = max(0, lengths[target]) + given_away
    lengths = [min(max(length, -(2**31)), 2**31 - 1) for length in lengths]
    struct.pack_into(f"<{n}i", section, column, *lengths)


def _lie_in_headers(draw, section: bytearray, n: int) -> bytearray:
    """Replace the headers blob (and its size) with other msgpack, or garbage."""
    keys_bytes, values_bytes, _ = struct.unpack_from("<III", section, 0)
    start = COLUMNS_START + 16 * n + keys_bytes + values_bytes
    blob = draw(st.one_of(
        st.binary(min_size=1, max_size=12),
        st.builds(msgpack.packb, st.lists(st.one_of(st.none(), header_pairs),
                                          min_size=max(1, n - 1), max_size=n + 1)),
        st.builds(msgpack.packb, st.lists(st.one_of(st.integers(-(2**63), 2**64 - 1),
                                                    st.text(max_size=3)),
                                          min_size=1, max_size=n + 1)),
    ))
    struct.pack_into("<I", section, 8, len(blob))
    return section[:start] + blob


@contextlib.contextmanager
def every_batch_checked(path: str):
    """Send every batch, whatever its record count, down one path."""
    saved = _column_check.SCALAR_MAX_RECORDS
    _column_check.SCALAR_MAX_RECORDS = 2**31 if path == "scalar" else 0
    try:
        yield
    finally:
        _column_check.SCALAR_MAX_RECORDS = saved


def outcome(check, *args):
    try:
        return "accepted", check(*args)
    except BatchFormatError as exc:  # CorruptRecordsError is one
        return type(exc), str(exc)


def validation_by(path: str, batch: bytes):
    with every_batch_checked(path):
        return outcome(validate_batch_for_stamping, batch)


@given(mutated_batches())
def test_both_paths_accept_and_refuse_the_same_batches_with_the_same_error(batch):
    scalar, vectorised = validation_by("scalar", batch), validation_by("numpy", batch)
    note(f"scalar: {scalar}, numpy: {vectorised}")
    assert scalar == vectorised


@given(valid_batches())
def test_both_paths_accept_every_honest_batch(batch):
    assert validation_by("scalar", batch)[0] == "accepted"
    assert validation_by("numpy", batch)[0] == "accepted"


@given(valid_batches(), st.data())
def test_the_two_column_functions_agree_on_any_lengths_and_times(batch, data):
    """The column functions alone, on an uncompressed section whose columns are rewritten at
    will (sizes kept, so only the columns decide)."""
    header = parse_header(batch)
    if header.compression != COMPRESSION_NONE:
        batch = build_batch([b"x"], create_times=0)
        header = parse_header(batch)
    n = header.record_count
    section = bytearray(batch[HEADER_SIZE:])
    values = data.draw(st.lists(st.one_of(INT32, st.integers(-2, 40)), min_size=2 * n,
                                max_size=2 * n), label="lengths")
    struct.pack_into(f"<{2 * n}i", section, COLUMNS_START + 8 * n, *values)
    times = data.draw(st.lists(INT64, min_size=n, max_size=n), label="create times")
    if data.draw(st.booleans(), label="rewrite the create times"):
        struct.pack_into(f"<{n}q", section, COLUMNS_START, *times)
    keys_bytes, values_bytes, _ = struct.unpack_from("<III", section, 0)
    args = (bytes(section), header, keys_bytes, values_bytes)
    assert outcome(check_columns_scalar, *args) == outcome(check_columns_vectorised, *args)
