"""The mirror's column-wise target section equals what ``build_batch`` makes of the same
records as lists with the reserved headers appended (the path it replaced), byte for byte:
so the target log, ``groups translate`` and the restart rule see exactly what they saw."""

from __future__ import annotations

import pytest

from tslog.client._types import ColumnBatch
from tslog.client.mirror import headers as reserved
from tslog.client.mirror.sections import Slice, build_section
from tslog.protocol.batch_header import COMPRESSION_ZSTD
from tslog.protocol.records import build_batch, decode_columns, iter_records, seal_section


def _fetched(values, keys=None, headers=None, base_offset=0, lat=1_700_000_000_123,
             times=None, compression=0):
    """A batch as the consumer hands it over: decoded columns, offsets and LAT stamped."""
    times = times or [1_600_000_000_000 + i for i in range(len(values))]
    raw = bytearray(build_batch(values, keys=keys, create_times=times, headers=headers,
                                compression=compression))
    raw[0:8] = base_offset.to_bytes(8, "little", signed=True)
    columns = decode_columns(bytes(raw), verify_crc=False)
    return columns._replace(log_append_time=lat)


def _expected(slices, partition):
    """The old path: per-record lists, reserved headers appended, ``build_batch``."""
    values, keys, times, headers = [], [], [], []
    for batch, start, stop in slices:
        records = list(iter_records(_rebuild(batch.columns), verify_crc=False))[start:stop]
        columns = batch.columns
        for i, record in enumerate(records, start):
            values.append(record.value)
            keys.append(record.key)
            times.append(columns.log_append_time)  # the source LAT is the target CreateTime
            mine = reserved.offset_headers(partition, columns.base_offset + i, 1,
                                           columns.log_append_time, [record.create_time])[0]
            headers.append(list(record.headers) + mine)
    return build_batch(values, keys=keys, create_times=times, headers=headers)


def _rebuild(columns):
    """Columns back into a batch iter_records can read (base offset kept)."""
    from tslog.protocol.records import _records  # noqa: PLC0415 - the decoder's row view
    rows = list(_records(columns))
    raw = bytearray(build_batch([r.value for r in rows], keys=[r.key for r in rows],
                                create_times=[r.create_time for r in rows],
                                headers=[r.headers or None for r in rows]))
    raw[0:8] = columns.base_offset.to_bytes(8, "little", signed=True)
    return bytes(raw)


def _batch(columns, start=0, partition=3):
    return ColumnBatch("t", partition, start, columns)


CASES = {
    "plain values": dict(values=[b"v%d" % i for i in range(50)]),
    "keys, nulls and empties": dict(values=[b"a", None, b"", b"dd"] * 5,
                                    keys=[None, b"k", b"", b"kk"] * 5),
    "own headers on some records": dict(
        values=[b"x"] * 20,
        headers=[[("h", b"1"), ("trace", b"abc")] if i % 3 == 0 else None for i in range(20)]),
    "many own headers": dict(values=[b"y"] * 3,
                             headers=[[(f"n{j}", bytes([j])) for j in range(14)]] * 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("start", [0, 7])
def test_section_equals_build_batch_of_the_same_records(case, start):
    columns = _fetched(**CASES[case], base_offset=1000)
    start = min(start, columns.record_count - 1)
    slices = [Slice(_batch(columns, start), start, columns.record_count)]
    assert seal_section(build_section(slices, 3)) == _expected(slices, 3)


def test_several_batches_and_a_cut_batch_make_one_section():
    first = _fetched([b"a" * 10] * 30, base_offset=0, lat=5)
    second = _fetched([b"b" * 20] * 40, keys=[b"k"] * 40, base_offset=30, lat=9,
                      compression=COMPRESSION_ZSTD)
    slices = [Slice(_batch(first, 4), 4, 30), Slice(_batch(second), 0, 17)]
    section = build_section(slices, 3)
    assert seal_section(section) == _expected(slices, 3)
    assert section.record_count == 43
    # the target CreateTime is each source batch's LAT; the source CreateTime is a header
    assert [section.create_time(i) for i in (0, 26, 42)] == [5, 9, 9]
    records = list(iter_records(seal_section(section)))
    assert [reserved.source_of(r.headers) for r in (records[0], records[26], records[42])] == [
        (3, 4, 5), (3, 30, 9), (3, 46, 9)]
    assert [reserved.create_time_of(r) for r in (records[0], records[26], records[42])] == [
        first.create_time[4], second.create_time[0], second.create_time[16]]


def test_large_run_uses_msgpack_array16_and_array32_forms():
    for count in (15, 16, 70_000):
        columns = _fetched([None] * count, base_offset=2**40)
        section = build_section([Slice(_batch(columns), 0, count)], 0)
        batch = seal_section(section)
        assert len(decode_columns(batch).headers) == count
        if count < 100:
            assert batch == _expected([Slice(_batch(columns), 0, count)], 0)


def test_a_large_fetched_batch_is_cut_into_runs_under_the_target_batch_limit():
    from tslog.client.mirror.runs import RUN_BYTES, slices, weight

    columns = _fetched([b"v" * 100] * 3000, headers=[[("big", b"h" * 400)]] * 3000)
    pieces = slices(_batch(columns, 10))
    assert len(pieces) > 1 and pieces[0].start == 10 and pieces[-1].stop == 3000
    assert all(a.stop == b.start for a, b in zip(pieces, pieces[1:]))
    assert all(weight(piece) <= RUN_BYTES for piece in pieces)
    assert all(len(seal_section(build_section([p], 0))) < RUN_BYTES + 4096 for p in pieces)


@pytest.mark.parametrize("limit", [1024, 5000, 64 << 10])
def test_records_of_mixed_sizes_are_cut_by_their_size_on_the_target(limit):
    """One large record among small ones: no slice passes the limit unless it is that one
    record alone, and every slice's real size on the target is within its weight."""
    from tslog.client.mirror.runs import slices, weight

    values = [b"s" * 10] * 50 + [b"L" * (3 * limit)] + [b"s" * 300] * 200
    pieces = slices(_batch(_fetched(values), 0), limit)
    assert pieces[0].start == 0 and pieces[-1].stop == len(values)
    assert all(a.stop == b.start for a, b in zip(pieces, pieces[1:]))
    for piece in pieces:
        assert weight(piece) <= limit or piece.count == 1
        assert len(seal_section(build_section([piece], 0))) - 80 <= weight(piece) + 16
