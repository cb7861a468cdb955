"""The batch header: byte layout as documented, every check, and leader stamping."""

import struct

import pytest

from tslog.protocol import (
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchFormatError,
    ErrorCode,
    build_batch,
    compute_crc,
    pack_header,
    parse_header,
    peek_length,
    stamp,
    validate_batch,
    verify_crc,
)


def make_batch(**kwargs) -> bytearray:
    kwargs.setdefault("create_times", [5_000, 4_000, 6_000])
    return bytearray(build_batch([b"a", b"bb", b"ccc"], **kwargs))


def patch(batch: bytearray, position: int, fmt: str, value: int) -> bytearray:
    """Overwrite one header field and re-seal the CRC, so only the field check can fail."""
    struct.pack_into(fmt, batch, position, value)
    struct.pack_into("<I", batch, 12, compute_crc(batch))
    return batch


def field(batch, position: int, fmt: str) -> int:
    return struct.unpack_from(fmt, batch, position)[0]


def test_header_is_80_bytes_with_fields_at_documented_positions():
    batch = make_batch(producer_id=77, producer_epoch=3, base_sequence=9)
    assert HEADER_SIZE == 80
    assert field(batch, 0, "<q") == 0  # base offset
    assert field(batch, 8, "<i") == -1  # leader epoch
    assert field(batch, 12, "<I") == compute_crc(batch)
    assert field(batch, 16, "<i") == len(batch)
    assert batch[20] == 1  # magic
    assert batch[21] == 0  # attributes: no compression, no headers
    assert field(batch, 22, "<H") == 0
    assert field(batch, 24, "<i") == 2  # last offset delta
    assert field(batch, 28, "<i") == 3  # record count
    assert field(batch, 32, "<q") == 5_000  # first create time
    assert field(batch, 40, "<q") == 4_000  # min
    assert field(batch, 48, "<q") == 6_000  # max
    assert field(batch, 56, "<q") == NO_TIMESTAMP
    assert field(batch, 64, "<q") == 77
    assert field(batch, 72, "<h") == 3
    assert field(batch, 74, "<h") == 0
    assert field(batch, 76, "<i") == 9


def test_parse_and_pack_are_inverse():
    batch = make_batch()
    header = parse_header(batch)
    assert pack_header(header) == bytes(batch[:HEADER_SIZE])
    assert header.last_offset == 2 and header.next_offset == 3 and header.compression == 0


def test_parse_header_reads_at_a_position_and_peek_length_finds_the_next_batch():
    first, second = make_batch(), make_batch(create_times=1)
    stream = bytes(first + second)
    assert peek_length(stream) == len(first)
    assert parse_header(stream, peek_length(stream)).first_create_time == 1


def test_validate_returns_the_header_of_a_good_batch():
    batch = make_batch()
    assert validate_batch(batch).record_count == 3
    assert validate_batch(bytes(batch)) == validate_batch(memoryview(batch))


@pytest.mark.parametrize(
    "position, fmt, value, reason",
    [
        (20, "<B", 2, "magic"),
        (21, "<B", 0b1000, "attributes"),
        (21, "<B", 0b11, "attributes"),  # compression 3 does not exist
        (22, "<H", 1, "reserved"),
        (74, "<h", 1, "reserved"),
        (24, "<i", 5, "last offset delta"),
        (28, "<i", 0, "record count"),
        (32, "<q", 9_000, "first create time above max"),
        (40, "<q", 5_001, "min above first"),
        (16, "<i", 79, "batch length below header size"),
        (16, "<i", 10_000, "batch length beyond the bytes"),
    ],
)
def test_inconsistent_header_is_refused(position, fmt, value, reason):
    batch = patch(make_batch(), position, fmt, value)
    with pytest.raises(BatchFormatError):
        validate_batch(batch)


def test_trailing_bytes_after_the_batch_are_refused():
    with pytest.raises(BatchFormatError):
        validate_batch(make_batch() + b"\x00")


def test_short_buffer_is_refused_without_struct_errors():
    for size in (0, 1, 16, 79):
        with pytest.raises(BatchFormatError):
            validate_batch(bytes(make_batch())[:size])


def test_corrupted_record_byte_fails_the_crc():
    batch = make_batch()
    batch[-1] ^= 0xFF
    with pytest.raises(BatchFormatError, match="CRC"):
        validate_batch(batch)
    with pytest.raises(BatchFormatError):
        verify_crc(batch)


def test_crc_is_crc32c_of_the_records_then_header_bytes_16_to_80():
    """The documented definition, checked with crc32c directly rather than our helpers."""
    from crc32c import crc32c

    batch = make_batch(headers=[None, [("h", b"v")], None])
    assert field(batch, 12, "<I") == crc32c(bytes(batch[16:80]), crc32c(bytes(batch[80:])))


def test_stamping_with_the_validation_crc_equals_stamping_from_scratch():
    from tslog.protocol.batch_header import stamped_header, validate_batch_for_stamping

    batch = make_batch()
    header, running = validate_batch_for_stamping(batch)
    reused = stamped_header(batch, header, 5, 2, 1_700_000_000_000, running)
    fresh = stamped_header(batch, header, 5, 2, 1_700_000_000_000)
    assert reused == fresh
    validate_batch(reused + bytes(batch[HEADER_SIZE:]))


@pytest.mark.parametrize("producer", [(-1, -1, -1), (7, 3, 41)])
def test_a_stamped_header_is_the_header_with_three_fields_set_and_the_crc_recomputed(producer):
    """What the leader writes, spelled out: pack the header with base offset, leader epoch
    and LogAppendTime replaced, then compute the CRC of the whole batch from scratch."""
    from tslog.protocol.batch_header import stamped_header

    producer_id, producer_epoch, base_sequence = producer
    batch = make_batch(producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=base_sequence, headers=[None, [("h", b"v")], None])
    header = parse_header(batch)
    expected = bytearray(pack_header(header._replace(
        base_offset=2**40 + 3, leader_epoch=2**31 - 1, log_append_time=1_700_000_000_123)))
    expected += batch[HEADER_SIZE:]
    struct.pack_into("<I", expected, 12, compute_crc(expected))
    stamped = stamped_header(batch, header, 2**40 + 3, 2**31 - 1, 1_700_000_000_123)
    assert stamped == bytes(expected[:HEADER_SIZE])


def test_base_offset_and_leader_epoch_are_outside_the_crc():
    batch = make_batch()
    struct.pack_into("<qi", batch, 0, 123_456, 42)
    header = validate_batch(batch)
    assert (header.base_offset, header.leader_epoch) == (123_456, 42)


def test_log_append_time_is_inside_the_crc():
    batch = make_batch()
    struct.pack_into("<q", batch, 56, 1_700_000_000_000)
    with pytest.raises(BatchFormatError):
        validate_batch(batch)


def test_stamp_assigns_offset_epoch_and_time_and_reseals():
    batch = make_batch()
    stamp(batch, base_offset=1000, leader_epoch=7, log_append_time=1_700_000_000_123)
    header = validate_batch(batch)
    assert header.base_offset == 1000
    assert header.leader_epoch == 7
    assert header.log_append_time == 1_700_000_000_123
    assert header.last_offset == 1002


def test_format_errors_map_to_corrupt_message_on_the_wire():
    assert BatchFormatError.error_code is ErrorCode.CORRUPT_MESSAGE
    assert issubclass(BatchFormatError, ValueError)


def test_count_records_and_newest_create_time_hop_over_whole_batches():
    from tslog.protocol.batch_header import count_records, newest_create_time

    first = bytes(build_batch([b"a", b"b", b"c"], create_times=[5_000, 9_000, 7_000]))
    second = bytes(build_batch([b"d"], create_times=[8_000]))
    third = bytes(build_batch([b"e", b"f"], create_times=[12_000, 1_000]))
    assert count_records(first + second + third) == 6
    assert count_records(b"") == 0
    assert newest_create_time(first) == 9_000
    assert newest_create_time(first + second) == 9_000
    assert newest_create_time(second + third + first) == 12_000
