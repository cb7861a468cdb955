"""Hypothesis: batches and frames round-trip, and no input makes a decoder raise a surprise."""

import struct

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tslog.protocol import (
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    CRC_START,
    HEADER_SIZE,
    HEADER_STRUCT,
    BatchFormatError,
    FrameReceiver,
    FrameTooLargeError,
    build_batch,
    compute_crc,
    decode_columns,
    encode_frame,
    iter_records,
    split_batches,
    stamp,
    to_arrow,
    validate_batch,
)

INT64 = st.integers(-(2**63), 2**63 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
maybe_bytes = st.one_of(st.none(), st.binary(max_size=40))
header_pairs = st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=8)), max_size=3)


@st.composite
def batch_inputs(draw):
    n = draw(st.integers(1, 25))
    values = draw(st.lists(maybe_bytes, min_size=n, max_size=n))
    keys = draw(st.one_of(st.none(), st.lists(maybe_bytes, min_size=n, max_size=n)))
    create_times = draw(st.one_of(
        st.none(), INT64, st.lists(INT64, min_size=n, max_size=n)))
    headers = draw(st.one_of(
        st.none(), st.lists(st.one_of(st.none(), header_pairs), min_size=n, max_size=n)))
    compression = draw(st.sampled_from([COMPRESSION_NONE, COMPRESSION_ZSTD]))
    return dict(values=values, keys=keys, create_times=create_times, headers=headers,
                compression=compression, default_create_time=1_700_000_000_000)


def expected_rows(inputs):
    n = len(inputs["values"])
    keys = inputs["keys"] or [None] * n
    times = inputs["create_times"]
    if times is None:
        times = [inputs["default_create_time"]] * n
    elif isinstance(times, int):
        times = [times] * n
    headers = [list(h) if h else [] for h in (inputs["headers"] or [None] * n)]
    return list(zip(keys, inputs["values"], times, headers))


@given(batch_inputs(), st.integers(0, 2**62), INT64)
def test_build_then_decode_gives_back_the_input(inputs, base_offset, log_append_time):
    batch = bytearray(build_batch(**inputs))
    stamp(batch, base_offset, 0, log_append_time)
    rows = expected_rows(inputs)
    n = len(rows)

    records = list(iter_records(batch))
    assert [(r.key, r.value, r.create_time, r.headers) for r in records] == rows
    assert [r.offset for r in records] == list(range(base_offset, base_offset + n))
    assert {r.log_append_time for r in records} == {log_append_time}

    columns = decode_columns(batch)
    assert columns.create_time.tolist() == [row[2] for row in rows]
    keys, values = bytes(columns.keys), bytes(columns.values)
    for i, (key, value, _, _) in enumerate(rows):
        if columns.key_valid[i]:
            assert keys[columns.key_offsets[i]:columns.key_offsets[i + 1]] == key
        else:
            assert key is None
        if columns.value_valid[i]:
            assert values[columns.value_offsets[i]:columns.value_offsets[i + 1]] == value
        else:
            assert value is None

    header = validate_batch(batch)
    times = [row[2] for row in rows]
    assert (header.first_create_time, header.min_create_time, header.max_create_time) == (
        times[0], min(times), max(times))


@given(batch_inputs(), st.integers(0, 2**40))
def test_arrow_agrees_with_the_rows(inputs, base_offset):
    pa = pytest.importorskip("pyarrow")
    batch = bytearray(build_batch(**inputs))
    stamp(batch, base_offset, 0, 123)
    table = to_arrow(decode_columns(batch))
    table.validate(full=True)
    rows = expected_rows(inputs)
    assert table.column("key").to_pylist() == [row[0] for row in rows]
    assert table.column("value").to_pylist() == [row[1] for row in rows]
    assert table.column("createTime").to_pylist() == [row[2] for row in rows]
    assert table.column("offset").to_pylist() == list(range(base_offset, base_offset + len(rows)))
    assert table.column("timestamp").to_pylist() == [123] * len(rows)
    assert table.schema.field("value").type == pa.binary()


@given(batch_inputs(), st.data())
def test_any_flipped_byte_after_the_epoch_is_caught(inputs, data):
    batch = bytearray(build_batch(**inputs))
    position = data.draw(st.integers(CRC_START, len(batch) - 1))
    batch[position] ^= data.draw(st.integers(1, 255))
    with pytest.raises(BatchFormatError):
        validate_batch(batch)
    with pytest.raises(BatchFormatError):
        decode_columns(batch)


@given(batch_inputs(), st.data())
def test_flipping_base_offset_or_epoch_keeps_the_crc_valid(inputs, data):
    batch = bytearray(build_batch(**inputs))
    position = data.draw(st.integers(0, 11))
    batch[position] ^= data.draw(st.integers(1, 255))
    header = validate_batch(batch)
    assert (header.base_offset, header.leader_epoch) == struct.unpack_from("<qi", batch, 0)


@given(batch_inputs(), st.integers(-(2**63), 2**63 - 1), INT32, INT64)
def test_stamp_then_validate_reads_the_fields_back(inputs, base_offset, epoch, log_append_time):
    batch = bytearray(build_batch(**inputs))
    stamp(batch, base_offset, epoch, log_append_time)
    header = validate_batch(batch)
    assert (header.base_offset, header.leader_epoch, header.log_append_time) == (
        base_offset, epoch, log_append_time)


def _decode_only_raises_format_errors(batch) -> None:
    try:
        columns = decode_columns(batch)
    except BatchFormatError:
        return
    list(iter_records(batch))  # whatever decodes must also iterate
    assert columns.record_count == validate_batch(batch).record_count


@given(st.binary(max_size=400))
def test_garbage_raises_only_format_errors(garbage):
    _decode_only_raises_format_errors(garbage)


@st.composite
def sealed_garbage(draw):
    """A header that passes every header check, sealed with a correct CRC, over random records."""
    n = draw(st.integers(1, 6))
    compression = draw(st.sampled_from([COMPRESSION_NONE, COMPRESSION_ZSTD]))
    attributes = compression | draw(st.sampled_from([0, 0b100]))
    section = draw(st.binary(max_size=200))
    times = sorted(draw(st.lists(INT64, min_size=3, max_size=3)))
    first = draw(st.sampled_from(times))
    fields = [0, -1, 0, HEADER_SIZE + len(section), 1, attributes, 0, n - 1, n, first,
              times[0], times[2], -1, -1, -1, 0, -1]
    batch = bytearray(HEADER_STRUCT.pack(*fields) + section)
    struct.pack_into("<I", batch, 12, compute_crc(batch))
    return batch


@given(sealed_garbage())
def test_sealed_garbage_records_raise_only_format_errors(batch):
    _decode_only_raises_format_errors(batch)


@given(batch_inputs(), st.data())
def test_resealed_damage_to_a_real_batch_raises_only_format_errors(inputs, data):
    inputs["compression"] = COMPRESSION_NONE  # so damage lands in the structure, not in zstd
    batch = bytearray(build_batch(**inputs))
    assume(len(batch) > HEADER_SIZE)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[position] = data.draw(st.integers(0, 255))
    struct.pack_into("<I", batch, 12, compute_crc(batch))
    _decode_only_raises_format_errors(batch)


@given(st.lists(st.binary(max_size=300), max_size=8), st.data())
def test_any_chunking_of_a_frame_stream_yields_exactly_the_frames(bodies, data):
    stream = b"".join(encode_frame(body) for body in bodies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = FrameReceiver(max_frame_bytes=300)
    frames = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        frames.extend(decoder.feed(stream[start:end]))
    assert frames == bodies
    assert decoder.buffered_bytes == 0
    decoder.feed_eof()


@given(st.integers(101, 2**32 - 1), st.binary(max_size=20))
def test_oversize_announcement_raises_frame_too_large(length, tail):
    decoder = FrameReceiver(max_frame_bytes=100)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"fine") + struct.pack(">I", length) + tail)


@given(st.binary(max_size=300), st.data())
def test_garbage_stream_yields_frames_or_frame_too_large_only(stream, data):
    def run(chunks):
        decoder, frames = FrameReceiver(max_frame_bytes=64), []
        try:
            for chunk in chunks:
                frames.extend(decoder.feed(chunk))
        except FrameTooLargeError:
            return frames, True
        return frames, False

    whole = run([stream])
    one_at_a_time = run([stream[i:i + 1] for i in range(len(stream))])
    cut = data.draw(st.integers(0, len(stream)))
    two_pieces = run([stream[:cut], stream[cut:]])
    # Fed whole, frames before the bad prefix are lost with the error; fed in pieces they are
    # returned first. Either way, the frames seen are a prefix of the byte-at-a-time ones.
    assert one_at_a_time[1] == whole[1] == two_pieces[1]
    assert whole[0] == one_at_a_time[0][:len(whole[0])]
    assert two_pieces[0] == one_at_a_time[0][:len(two_pieces[0])]
    if not whole[1]:
        assert whole[0] == one_at_a_time[0] == two_pieces[0]


@given(st.binary(max_size=400))
def test_split_batches_of_garbage_raises_only_format_errors(garbage):
    try:
        pieces = split_batches(garbage)
    except BatchFormatError:
        return
    assert sum(len(piece) for piece in pieces) == len(garbage)
    for piece in pieces:
        _decode_only_raises_format_errors(piece)
