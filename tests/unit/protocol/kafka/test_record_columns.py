"""The column-wise Kafka record codec equals the per-record one it replaced, byte for byte,
over random keys, values, nulls (an empty key is not a null one), headers and timestamps far
apart (varints of every width up to ten bytes); and whatever bytes it is handed, it either
decodes what the per-record decoder decodes or raises ``KafkaBatchError`` where it does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tslog.protocol.batch_header import stamp
from tslog.protocol.kafka import compression, convert
from tslog.protocol.kafka import record_batch as rb
from tslog.protocol.kafka.errors import KafkaBatchError
from tslog.protocol.kafka.record_columns import decode_records
from tests.unit.protocol.kafka import per_record_oracle as oracle

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
maybe_bytes = st.none() | st.just(b"") | st.binary(max_size=200)
headers = st.none() | st.lists(st.tuples(st.text(max_size=5), maybe_bytes), max_size=3)
rows = st.lists(st.tuples(maybe_bytes, maybe_bytes, headers), min_size=1, max_size=40)
# Timestamps: near one another (1-byte deltas) or anywhere a delta still fits a varlong.
times = st.one_of(st.integers(0, 1 << 42), st.integers(-(1 << 61), 1 << 61))


def _columns(data):
    keys, values, pairs = map(list, zip(*data))
    return keys, values, pairs


@settings(max_examples=150, deadline=None)
@given(data=rows, stamps=st.data())
def test_encode_equals_the_per_record_encoder(data, stamps):
    keys, values, pairs = _columns(data)
    ts = stamps.draw(st.lists(times, min_size=len(data), max_size=len(data)))
    new = rb.encode_batch(values, keys, ts, pairs, base_offset=9, producer_id=4,
                          base_sequence=2)
    assert new == oracle.encode_batch(values, keys, ts, pairs, base_offset=9, producer_id=4,
                                      base_sequence=2)
    decoded, old = rb.decode_batch(new), oracle.decode_batch(new)
    assert tuple(decoded) == tuple(old)
    assert decoded.keys == keys and decoded.values == values


@settings(max_examples=100, deadline=None)
@given(data=rows, base=times, lat=st.booleans(), stamps=st.data())
def test_conversions_equal_the_list_based_ones(data, base, lat, stamps):
    keys, values, pairs = _columns(data)
    ts = [base + d for d in stamps.draw(st.lists(st.integers(-(1 << 40), 1 << 40),
                                                 min_size=len(data), max_size=len(data)))]
    kafka = rb.encode_batch(values, keys, ts, pairs, producer_id=4, producer_epoch=1,
                            base_sequence=2)
    attributes, tslog = convert.kafka_bytes_to_tslog(kafka)
    assert attributes == 0
    assert tslog == convert.kafka_to_tslog(rb.decode_batch(kafka))
    stored = bytearray(tslog)
    stamp(stored, 100, 3, 1_700_000_000_000)
    stored = bytes(stored)
    kind = rb.LOG_APPEND_TIME if lat else rb.CREATE_TIME
    back = convert.tslog_to_kafka(stored, kind)
    batch = rb.decode_batch(back)
    expected_headers = [[(k, b"" if v is None else v) for k, v in p] if p else [] for p in pairs]
    assert (batch.keys, batch.values, batch.headers, batch.base_offset) == \
        (keys, values, expected_headers, 100)
    assert back == oracle.encode_batch(
        values, keys, ts, [h or None for h in expected_headers],
        timestamp_type=kind, max_timestamp=1_700_000_000_000 if lat else None,
        base_offset=100, partition_leader_epoch=3, producer_id=4, producer_epoch=1,
        base_sequence=2)


def _zigzag(value: int) -> bytes:
    return oracle._zigzag(value)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=120), count=st.integers(0, 12), data=st.data())
def test_any_bytes_decode_as_the_per_record_decoder_or_raise_where_it_does(body, count, data):
    if data.draw(st.booleans()):  # a plausible start: a real record section, then mutated
        n = data.draw(st.integers(1, 5))
        good = oracle.encode_batch([b"v"] * n, [b""] * n, 5)[rb.HEADER_SIZE:]
        cut = data.draw(st.integers(0, len(good)))
        body, count = good[:cut] + body[:data.draw(st.integers(0, 3))], n
    oracle.assert_decodes_as_the_oracle(decode_records, body, count)


@pytest.mark.parametrize("value", [0, -1, 63, -64, 64, 1 << 20, (1 << 63) - 1, -(1 << 63)])
def test_varints_of_every_width_round_trip(value):
    data = rb.encode_batch([b"x", b""], [None, b""], [value, value], [[("h", None)], None])
    batch = rb.decode_batch(data)
    assert batch.timestamps() == [value, value] and batch.keys == [None, b""]
    assert data == oracle.encode_batch([b"x", b""], [None, b""], [value, value],
                                       [[("h", None)], None])


@pytest.mark.parametrize("codec", compression.available())
def test_compressed_batches_convert_column_wise(codec):
    kafka = rb.encode_batch([b"v%d" % i for i in range(50)], None, 7, codec=codec)
    _, tslog = convert.kafka_bytes_to_tslog(kafka)
    assert tslog == convert.kafka_to_tslog(rb.decode_batch(kafka))


def test_an_eleven_byte_varint_and_a_65_bit_one_are_refused():
    record = b"\x00" + b"\xff" * 10 + b"\x01" + b"\x00\x01\x01\x00"
    body = _zigzag(len(record)) + record
    with pytest.raises(KafkaBatchError):
        decode_records(body, 1)
    record = b"\x00" + b"\xff" * 9 + b"\x7f" + b"\x00\x01\x01\x00"
    with pytest.raises(KafkaBatchError):
        decode_records(_zigzag(len(record)) + record, 1)


@pytest.mark.parametrize("n", [1, 2, 65, 300, 9000])
def test_fixed_size_records_take_the_strided_copy_and_equal_the_oracle(n):
    """Fixed-size keys and values: records differ only in the offset delta's width, so the
    blobs move as a few strided runs; an odd record in the middle forces more runs."""
    keys = [b"k%04d" % (i % 10000) for i in range(n)]
    values = [b"v" * 40] * n
    if n > 2:
        values[n // 2] = b"odd"
    data = rb.encode_batch(values, keys, 1_700_000_000_000)
    assert data == oracle.encode_batch(values, keys, 1_700_000_000_000)
    batch = rb.decode_batch(data)
    assert batch.keys == keys and batch.values == values


def test_a_record_over_a_mebibyte_and_runs_of_sizes_decode_as_the_oracle():
    """A 4-byte length varint ends a same-size run; many short runs switch the walk to one
    record at a time; both must find the same records as the per-record decoder."""
    values = [b"a" * 10] * 40 + [b"b" * (1 << 21)] + [b"c" * (i % 5) for i in range(60)]
    keys = [None] * len(values)
    data = rb.encode_batch(values, keys, 3)
    assert data == oracle.encode_batch(values, keys, 3)
    assert rb.decode_batch(data).values == values
    assert tuple(rb.decode_batch(data)) == tuple(oracle.decode_batch(data))
