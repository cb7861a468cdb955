"""The broker-side batch check refuses every lie of issue 20 and accepts every honest batch.

Goal: ``validate_batch`` (what leader, follower and recovery run) must refuse each batch a
consumer could not decode, although its CRC is right. Method: the lies of
``tests/helpers/batches.py``, each checked against the validator and, for contrast, against
the consumer's decoder, which must refuse them too; honest batches of every shape pass both.
"""

from __future__ import annotations

import pytest

from tests.helpers.batches import (
    FIVE_VALUES,
    INT32_MAX,
    LIES,
    five_records,
    issue_lie,
    with_header,
    with_section,
    zstd_bomb,
)
from tslog.protocol.batch_header import (
    COMPRESSION_ZSTD,
    HEADER_SIZE,
    BatchFormatError,
    check_records,
    parse_header,
    validate_batch,
    validate_batch_for_stamping,
    verify_crc,
)
from tslog.protocol.records import (
    MAX_UNCOMPRESSED_BYTES,
    CorruptRecordsError,
    build_batch,
    decode_columns,
    iter_records,
)


@pytest.mark.parametrize("lie", sorted(LIES))
def test_each_lie_has_a_valid_crc_and_is_refused(lie):
    batch = LIES[lie]()
    verify_crc(batch)  # the CRC alone cannot tell
    with pytest.raises(CorruptRecordsError):
        validate_batch(batch)
    with pytest.raises(CorruptRecordsError):
        validate_batch_for_stamping(batch)
    with pytest.raises(BatchFormatError):  # and indeed no consumer could read it
        decode_columns(batch)


def test_the_issue_batch_claims_two_billion_records_over_five():
    header = parse_header(issue_lie())
    assert (header.record_count, header.last_offset_delta) == (INT32_MAX, INT32_MAX - 1)
    with pytest.raises(CorruptRecordsError, match="too short for 2147483647"):
        validate_batch(issue_lie())


@pytest.mark.parametrize("delta", [3, 5, INT32_MAX - 1, -1])
def test_last_offset_delta_that_disagrees_with_the_count_is_refused(delta):
    with pytest.raises(BatchFormatError, match="disagree"):
        validate_batch(with_header(five_records(), last_offset_delta=delta))


@pytest.mark.parametrize("count", [1, 4, 6, 1000, INT32_MAX])
def test_any_record_count_but_the_true_one_is_refused(count):
    lie = with_header(five_records(), record_count=count, last_offset_delta=count - 1)
    with pytest.raises(CorruptRecordsError):
        validate_batch(lie)


def test_compression_flag_cleared_over_a_zstd_section_is_refused():
    batch = five_records(compression=COMPRESSION_ZSTD)
    lie = with_header(batch, attributes=parse_header(batch).attributes & ~COMPRESSION_ZSTD)
    with pytest.raises(CorruptRecordsError):
        validate_batch(lie)


def test_zstd_section_with_trailing_garbage_is_refused():
    batch = five_records(compression=COMPRESSION_ZSTD)
    with pytest.raises(CorruptRecordsError):
        validate_batch(with_section(batch, bytes(batch[HEADER_SIZE:]) + b"junk"))


def test_zstd_frame_of_an_honest_section_for_another_count_is_refused():
    other = build_batch([b"a", b"b"], create_times=1_700_000_000_000, compression=COMPRESSION_ZSTD)
    lie = with_section(five_records(compression=COMPRESSION_ZSTD), bytes(other[HEADER_SIZE:]))
    with pytest.raises(CorruptRecordsError):
        validate_batch(lie)


def test_zstd_bomb_declaring_its_size_is_refused_before_inflating():
    bomb = zstd_bomb(MAX_UNCOMPRESSED_BYTES + 1)
    assert len(bomb) < 10_000
    with pytest.raises(CorruptRecordsError, match="over the limit"):
        validate_batch(bomb)


def test_zstd_bomb_hiding_its_size_is_refused_at_the_bound():
    bomb = zstd_bomb(MAX_UNCOMPRESSED_BYTES + 1, declare_size=False)
    with pytest.raises(CorruptRecordsError, match="does not decompress"):
        validate_batch(bomb)


def test_zstd_of_zeros_under_the_bound_is_inflated_and_still_refused():
    # Zeros are not a section for five records, however small: the check reads them.
    with pytest.raises(CorruptRecordsError):
        validate_batch(zstd_bomb(1 << 20))


HONEST = {
    "plain": lambda: build_batch(FIVE_VALUES),
    "keys_and_nulls": lambda: build_batch([b"v", None, b""], keys=[None, b"k", b""]),
    "headers": lambda: build_batch([b"a", b"b"], headers=[None, [("h", b"1"), ("", b"")]]),
    "empty_header_value": lambda: build_batch([b"a"], headers=[[("x", b"")]]),
    "create_times": lambda: build_batch([b"a", b"b", b"c"], create_times=[5, -3, 9]),
    "zstd": lambda: build_batch([b"x" * 500] * 50, compression=COMPRESSION_ZSTD),
    "zstd_headers": lambda: build_batch([b"a"] * 3, headers=[[("k", b"v")]] * 3,
                                        compression=COMPRESSION_ZSTD),
    "one_empty_value": lambda: build_batch([b""]),
    "thousand": lambda: build_batch([b"%d" % i for i in range(1000)]),
}


@pytest.mark.parametrize("shape", sorted(HONEST))
def test_honest_batches_pass_and_decode(shape):
    batch = HONEST[shape]()
    header = validate_batch(batch)
    check_records(memoryview(batch), header)
    assert len(list(iter_records(batch))) == header.record_count


def test_a_refused_batch_names_what_is_wrong():
    with pytest.raises(CorruptRecordsError, match="sizes disagree"):
        validate_batch(LIES["section_sizes_disagree"]())
