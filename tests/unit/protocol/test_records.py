"""Record batches: building, decoding to rows, columns and Arrow, and refusing bad bytes."""

import struct
import threading
import time
from array import array

import msgpack
import numpy as np
import pytest
import zstandard

from tslog.protocol import (
    ATTR_HAS_HEADERS,
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchFormatError,
    CorruptRecordsError,
    Record,
    build_batch,
    compute_crc,
    decode_columns,
    iter_records,
    parse_header,
    split_batches,
    stamp,
    to_arrow,
    validate_batch,
)

# A small batch with a null key, an empty key, a null value and one record with headers.
GOLDEN_INPUT = dict(
    values=[b"a", None, b"bc"],
    keys=[b"k", None, b""],
    create_times=[1000, 999, 1001],
    headers=[None, [("h", b"v")], None],
)
GOLDEN_HEX = (
    "0000000000000000ffffffff172ef2c39a000000010400000200000003000000"
    "e803000000000000e703000000000000e903000000000000ffffffffffffffff"
    "ffffffffffffffffffff0000ffffffff01000000030000000a000000e8030000"
    "00000000e703000000000000e90300000000000001000000ffffffff00000000"
    "01000000ffffffff020000006b61626393c09192a168c40176c0"
)


def reseal(batch: bytearray) -> bytearray:
    struct.pack_into("<I", batch, 12, compute_crc(batch))
    return batch


def test_golden_bytes_freeze_the_format():
    assert build_batch(**GOLDEN_INPUT).hex() == GOLDEN_HEX


def test_records_section_follows_the_documented_layout():
    section = build_batch(**GOLDEN_INPUT)[HEADER_SIZE:]
    keys_bytes, values_bytes, headers_bytes = struct.unpack_from("<III", section, 0)
    assert (keys_bytes, values_bytes) == (1, 3)
    assert struct.unpack_from("<3q", section, 12) == (1000, 999, 1001)
    assert struct.unpack_from("<3i", section, 36) == (1, -1, 0)  # key lengths
    assert struct.unpack_from("<3i", section, 48) == (1, -1, 2)  # value lengths
    assert section[60:61] == b"k"
    assert section[61:64] == b"abc"
    assert msgpack.unpackb(section[64:]) == [None, [["h", b"v"]], None]
    assert len(section) == 64 + headers_bytes


def test_zstd_batch_holds_the_same_section_in_one_frame():
    plain = build_batch(**GOLDEN_INPUT)
    packed = build_batch(**GOLDEN_INPUT, compression=COMPRESSION_ZSTD)
    header = validate_batch(packed)
    assert header.compression == COMPRESSION_ZSTD
    assert header.attributes & ATTR_HAS_HEADERS
    section = zstandard.ZstdDecompressor().decompress(packed[HEADER_SIZE:])
    assert section == plain[HEADER_SIZE:]


def test_built_batch_header_describes_the_records():
    batch = build_batch([b"x", b"y", b"z"], create_times=[20, 10, 30], producer_id=5,
                        producer_epoch=1, base_sequence=40)
    header = validate_batch(batch)
    assert header.base_offset == 0 and header.leader_epoch == -1
    assert header.log_append_time == NO_TIMESTAMP
    assert (header.record_count, header.last_offset_delta) == (3, 2)
    assert (header.first_create_time, header.min_create_time, header.max_create_time) == (20, 10, 30)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (5, 1, 40)
    assert header.batch_length == len(batch)
    assert header.attributes == 0


def test_records_read_back_with_offsets_and_times_after_stamping():
    batch = bytearray(build_batch([b"a", b"b"], keys=[b"k1", None], create_times=[7, 8]))
    stamp(batch, base_offset=500, leader_epoch=2, log_append_time=99)
    assert list(iter_records(batch)) == [
        Record(500, 7, 99, b"k1", b"a", []),
        Record(501, 8, 99, None, b"b", []),
    ]


def test_null_and_empty_keys_and_values_stay_distinct():
    records = list(iter_records(build_batch([None, b"", b"v"], keys=[b"", None, b"k"])))
    assert [(r.key, r.value) for r in records] == [(b"", None), (None, b""), (b"k", b"v")]


def test_create_time_defaults():
    one = build_batch([b"a", b"b"], default_create_time=42)
    assert [r.create_time for r in iter_records(one)] == [42, 42]
    shared = build_batch([b"a", b"b"], create_times=43)
    assert [r.create_time for r in iter_records(shared)] == [43, 43]
    before = time.time_ns() // 1_000_000
    now = validate_batch(build_batch([b"a"])).first_create_time
    assert before <= now <= time.time_ns() // 1_000_000
    numpy_times = build_batch([b"a", b"b"], create_times=np.array([5, 6]))
    assert [r.create_time for r in iter_records(numpy_times)] == [5, 6]


def test_headers_round_trip_and_only_set_the_attribute_when_present():
    batch = build_batch([b"a", b"b", b"c"], headers=[[("k", b"v"), ("k", b"w")], None, []])
    assert validate_batch(batch).attributes & ATTR_HAS_HEADERS
    assert [r.headers for r in iter_records(batch)] == [[("k", b"v"), ("k", b"w")], [], []]
    assert decode_columns(batch).headers == [(("k", b"v"), ("k", b"w")), None, None]
    bare = build_batch([b"a", b"b"], headers=[None, []])
    assert validate_batch(bare).attributes == 0
    assert decode_columns(bare).headers is None


def test_zstd_shrinks_repetitive_values_and_reads_back_equal():
    values = [b"sensor=42 temperature=21.5" * 4] * 500
    plain = build_batch(values, create_times=1)
    packed = build_batch(values, create_times=1, compression=COMPRESSION_ZSTD)
    assert len(packed) < len(plain) // 10
    assert list(iter_records(packed)) == list(iter_records(plain))


def test_columns_are_ready_for_arrow_and_numpy():
    columns = decode_columns(build_batch(**GOLDEN_INPUT))
    assert columns.record_count == 3
    assert columns.create_time.dtype == np.int64
    assert columns.create_time.tolist() == [1000, 999, 1001]
    assert columns.key_offsets.dtype == np.int32
    assert columns.key_offsets.tolist() == [0, 1, 1, 1]
    assert columns.key_valid.tolist() == [True, False, True]
    assert columns.value_offsets.tolist() == [0, 1, 1, 3]
    assert columns.value_valid.tolist() == [True, False, True]
    assert bytes(columns.keys) == b"k" and bytes(columns.values) == b"abc"


def test_decoding_accepts_bytes_bytearray_and_memoryview():
    batch = build_batch(**GOLDEN_INPUT)
    expected = list(iter_records(batch))
    assert list(iter_records(bytearray(batch))) == expected
    assert list(iter_records(memoryview(batch))) == expected


def test_to_arrow_gives_spark_style_columns():
    pa = pytest.importorskip("pyarrow")
    batch = bytearray(build_batch(**GOLDEN_INPUT))
    stamp(batch, base_offset=10, leader_epoch=0, log_append_time=2000)
    table = to_arrow(decode_columns(batch))
    assert table.schema.names == ["key", "value", "offset", "createTime", "timestamp"]
    assert table.schema.field("key").type == pa.binary()
    assert table.column(0).to_pylist() == [b"k", None, b""]
    assert table.column(1).to_pylist() == [b"a", None, b"bc"]
    assert table.column(2).to_pylist() == [10, 11, 12]
    assert table.column(3).to_pylist() == [1000, 999, 1001]
    assert table.column(4).to_pylist() == [2000, 2000, 2000]
    table.validate(full=True)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(values=[]),
        dict(values=[b"a"], keys=[b"k", b"l"]),
        dict(values=[b"a"], create_times=[1, 2]),
        dict(values=[b"a"], headers=[None, None]),
        dict(values=[b"a"], compression=3),
        dict(values=[b"a"], create_times=2**63),
        dict(values=[b"a", b"b"], create_times=[0, -(2**63) - 1]),
        dict(values=[b"a"], producer_epoch=2**15),
    ],
)
def test_build_refuses_bad_shapes_and_ranges(kwargs):
    with pytest.raises(ValueError):
        build_batch(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(values=["text"]),
        dict(values=[b"a", 5]),
        dict(values=[b"a", None, "text"]),
        dict(values=[array("i", [1, 2])]),  # bytes-like but 4-byte items
        dict(values=[b"a"], keys=["k"]),
        dict(values=[b"a"], create_times=[1.5]),
        dict(values=[b"a"], create_times="1"),
        dict(values=[b"a"], headers=[[("k", "not bytes")]]),
        dict(values=[b"a"], headers=[[(b"not str", b"v")]]),
        dict(values=[b"a"], headers=["nope"]),
    ],
)
def test_build_refuses_wrong_types(kwargs):
    with pytest.raises(TypeError):
        build_batch(**kwargs)


def _section_patch(position: int, fmt: str, value) -> bytearray:
    """The golden batch with one records-section field overwritten and the CRC re-sealed."""
    batch = bytearray(build_batch(**GOLDEN_INPUT))
    struct.pack_into(fmt, batch, HEADER_SIZE + position, value)
    return reseal(batch)


@pytest.mark.parametrize(
    "position, fmt, value",
    [
        (0, "<I", 2),  # keys_bytes no longer fits the batch length
        (4, "<I", 0xFFFFFFFF),  # values_bytes absurd
        (12, "<q", 5),  # first create time disagrees with the header
        (20, "<q", 0),  # min create time disagrees with the header
        (36, "<i", -2),  # key length below -1
        (36, "<i", 0),  # key lengths no longer add up to keys_bytes
        (48, "<i", 2**31 - 1),  # value lengths overflow
        (64, "<B", 0xC1),  # headers blob: invalid msgpack
        (64, "<B", 0x92),  # headers blob: list of 2 for 3 records
    ],
)
def test_inconsistent_records_section_is_corrupt(position, fmt, value):
    with pytest.raises(CorruptRecordsError):
        decode_columns(_section_patch(position, fmt, value))


def test_headers_attribute_without_headers_blob_is_corrupt():
    batch = bytearray(build_batch([b"a"]))
    batch[21] |= ATTR_HAS_HEADERS
    with pytest.raises(CorruptRecordsError):
        decode_columns(reseal(batch))


def test_headers_of_the_wrong_shape_are_corrupt():
    batch = bytearray(build_batch([b"a"], headers=[[("k", b"v")]]))
    blob = msgpack.packb([[["k", "text not bin"]]], use_bin_type=True)
    section = batch[HEADER_SIZE:HEADER_SIZE + 28] + blob
    struct.pack_into("<I", section, 8, len(blob))
    rebuilt = batch[:HEADER_SIZE] + section
    struct.pack_into("<i", rebuilt, 16, len(rebuilt))
    with pytest.raises(CorruptRecordsError):
        decode_columns(reseal(rebuilt))


def test_crc_failure_is_a_format_error_unless_the_caller_skips_it():
    batch = bytearray(build_batch(**GOLDEN_INPUT))
    batch[12] ^= 1
    with pytest.raises(BatchFormatError, match="CRC"):
        decode_columns(batch)
    assert decode_columns(batch, verify_crc=False).record_count == 3


def _zstd_batch(section: bytes) -> bytearray:
    batch = bytearray(build_batch([b"a"], create_times=1, compression=COMPRESSION_ZSTD))
    rebuilt = batch[:HEADER_SIZE] + section
    struct.pack_into("<i", rebuilt, 16, len(rebuilt))
    return reseal(rebuilt)


def test_zstd_garbage_and_trailing_bytes_are_corrupt():
    good = build_batch([b"a"], create_times=1, compression=COMPRESSION_ZSTD)[HEADER_SIZE:]
    for section in (b"not zstd at all", good + b"\x00", good[:-3]):
        with pytest.raises(CorruptRecordsError):
            decode_columns(_zstd_batch(section))


def test_zstd_bomb_is_refused_before_inflating():
    bomb = zstandard.ZstdCompressor().compress(b"\x00" * (1 << 20))
    batch = _zstd_batch(bomb)
    with pytest.raises(CorruptRecordsError, match="limit"):
        decode_columns(batch, max_uncompressed_bytes=1 << 16)
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(b"\x00" * (1 << 20))
    with pytest.raises(CorruptRecordsError):
        decode_columns(_zstd_batch(unsized), max_uncompressed_bytes=1 << 16)


def test_iter_records_reports_corruption_when_called_not_when_iterated():
    batch = bytearray(build_batch([b"a"]))
    batch[-1] ^= 1
    with pytest.raises(BatchFormatError):
        iter_records(batch)


def test_batches_built_in_parallel_threads_are_all_intact():
    results, errors = [], []

    def work(worker: int):
        try:
            for i in range(50):
                values = [b"%d-%d-%d" % (worker, i, j) * 20 for j in range(50)]
                batch = build_batch(values, create_times=i, compression=COMPRESSION_ZSTD)
                assert [r.value for r in iter_records(batch)] == values
            results.append(worker)
        except Exception as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and sorted(results) == [0, 1, 2, 3]


def test_parse_header_of_a_built_batch_needs_no_record_decoding():
    batch = build_batch([b"x" * 10] * 4, create_times=[3, 1, 4, 1])
    header = parse_header(batch)
    assert (header.min_create_time, header.max_create_time) == (1, 4)


def test_split_batches_cuts_a_fetch_records_value_into_whole_batches():
    first = build_batch([b"a"], create_times=1)
    second = build_batch([b"b", b"c"], create_times=2)
    pieces = split_batches(first + second)
    assert [bytes(piece) for piece in pieces] == [first, second]
    assert [r.value for piece in pieces for r in iter_records(piece)] == [b"a", b"b", b"c"]
    assert split_batches(b"") == []


@pytest.mark.parametrize("cut", [1, 79, 80, -1])
def test_split_batches_refuses_a_torn_tail(cut):
    stream = build_batch([b"a"]) + build_batch([b"bbbb"])
    with pytest.raises(BatchFormatError):
        split_batches(stream[:cut] if cut > 0 else stream[:cut])


def test_split_batches_refuses_a_length_that_cannot_advance():
    batch = bytearray(build_batch([b"a"]))
    struct.pack_into("<i", batch, 16, 0)
    with pytest.raises(BatchFormatError):
        split_batches(batch)
