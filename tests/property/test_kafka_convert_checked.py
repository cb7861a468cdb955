"""The header and records CRC a Kafka batch's conversion hands the log (``CheckedBatch``,
``convert.kafka_bytes_to_checked`` and ``kafka_bytes_to_tslog_within``) are exactly what the
full validation finds in the converted bytes (``validate_batch_for_stamping``, the oracle),
over random keys, values, nulls, headers, CreateTimes, producer fields and compression. The
log stamps a converted batch from these without checking its bytes again, so they must be
the bytes' own."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tslog.protocol.batch_header import validate_batch_for_stamping
from tslog.protocol.kafka import compression, convert
from tslog.protocol.kafka import record_batch as rb

maybe_bytes = st.none() | st.just(b"") | st.binary(max_size=120)
headers = st.none() | st.lists(st.tuples(st.text(max_size=5), maybe_bytes), max_size=3)
rows = st.lists(st.tuples(maybe_bytes, maybe_bytes, headers), min_size=1, max_size=30)
producers = st.sampled_from([(-1, -1, -1), (7, 0, 0), (2**40, 3, 2**31 - 5)])
codecs = st.sampled_from([compression.NONE, compression.GZIP])


def _kafka_batch(data, base, deltas, producer, codec) -> bytes:
    keys, values, pairs = map(list, zip(*data))
    producer_id, producer_epoch, base_sequence = producer
    return rb.encode_batch(values, keys, [base + d for d in deltas], pairs, codec=codec,
                           producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence)


@settings(max_examples=150, deadline=None)
@given(data=rows, base=st.integers(0, 1 << 42), producer=producers, codec=codecs,
       draw=st.data())
def test_a_converted_batch_carries_its_own_header_and_crc(data, base, producer, codec, draw):
    deltas = draw.draw(st.lists(st.integers(-(1 << 30), 1 << 30), min_size=len(data),
                                max_size=len(data)))
    kafka = _kafka_batch(data, base, deltas, producer, codec)
    _, checked = convert.kafka_bytes_to_checked(kafka)
    assert (checked.header, checked.records_crc) == validate_batch_for_stamping(checked.data)
    assert convert.kafka_bytes_to_tslog(kafka)[1] == checked.data


@settings(max_examples=60, deadline=None)
@given(data=rows, limit=st.integers(200, 3000))
def test_each_piece_of_a_split_batch_carries_its_own_header_and_crc(data, limit):
    kafka = _kafka_batch(data, 1_700_000_000_000, range(len(data)), (-1, -1, -1),
                         compression.NONE)
    _, pieces = convert.kafka_bytes_to_tslog_within(kafka, limit)
    assert sum(piece.header.record_count for piece in pieces) == len(data)
    for piece in pieces:
        assert (piece.header, piece.records_crc) == validate_batch_for_stamping(piece.data)
