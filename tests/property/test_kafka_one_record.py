"""The one-record fast path of the Kafka listener's conversion (``kafka/one_record.py``)
against the general, column-wise conversion (``convert.columnwise_checked``, the oracle):
over honest one-record batches it answers, and equals the oracle byte for byte with the
same header and records' CRC; over mutated batches (any byte changed, the CRC fixed up or
not) it answers only where the oracle converts, and then equals it. So which path ran
never shows."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import assume, given, settings, strategies as st

from tslog.protocol.batch_header import validate_batch_for_stamping
from tslog.protocol.kafka import compression, convert
from tslog.protocol.kafka import record_batch as rb
from tslog.protocol.kafka.errors import KafkaBatchError
from tslog.protocol.kafka.one_record import one_record_checked as with_fields

maybe_bytes = st.none() | st.just(b"") | st.binary(max_size=300)
producers = st.sampled_from([(-1, -1, -1), (7, 0, 0), (2**40, 3, 2**31 - 5)])
times = st.integers(-(1 << 40), 1 << 45)


def one_record_batch(key, value, when, producer, headers=None, codec=compression.NONE):
    producer_id, producer_epoch, base_sequence = producer
    return rb.encode_batch([value], [key], [when], [headers], codec=codec,
                           producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence)


def one_record_checked(data):
    """The fast path's answer (None where it leaves the batch to the general path), after
    checking that the header fields it hands on are the header's own."""
    fields, answer = with_fields(data)
    if len(data) > rb.HEADER_SIZE:
        assert fields == rb.HEADER.unpack_from(data)
    return answer


def oracle(data):
    try:
        return convert.columnwise_checked(data)
    except KafkaBatchError:
        return None


@settings(max_examples=300, deadline=None)
@given(key=maybe_bytes, value=maybe_bytes, when=times, producer=producers)
def test_an_honest_one_record_batch_takes_the_fast_path_and_equals_the_general_one(
        key, value, when, producer):
    kafka = one_record_batch(key, value, when, producer)
    fast = one_record_checked(kafka)
    assert fast is not None
    assert fast == oracle(kafka)
    attributes, checked = fast
    assert (checked.header, checked.records_crc) == validate_batch_for_stamping(checked.data)
    assert convert.kafka_bytes_to_checked(memoryview(kafka)) == fast


@pytest.mark.parametrize("shape", ["two records", "a header", "gzip"])
def test_other_batches_are_left_to_the_general_path(shape):
    if shape == "two records":
        kafka = rb.encode_batch([b"a", b"b"], None, [1, 2])
    elif shape == "a header":
        kafka = one_record_batch(b"k", b"v", 5, (-1, -1, -1), headers=[("h", b"x")])
    else:
        kafka = one_record_batch(b"k", b"v", 5, (-1, -1, -1), codec=compression.GZIP)
    assert one_record_checked(kafka) is None
    assert convert.kafka_bytes_to_checked(kafka) == oracle(kafka)


@settings(max_examples=1500, deadline=None)
@given(key=maybe_bytes, value=maybe_bytes, when=times, producer=producers,
       edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                      min_size=1, max_size=3),
       fix_crc=st.booleans(), cut=st.integers(0, 3))
def test_a_mutated_batch_is_answered_only_where_the_general_path_converts_it(
        key, value, when, producer, edits, fix_crc, cut):
    data = bytearray(one_record_batch(key, value, when, producer))
    for at, byte in edits:
        data[at % len(data)] = byte
    if cut:
        del data[-cut:]
        struct.pack_into(">i", data, 8, len(data) - 12)
    if fix_crc and len(data) > 21:
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    fast = one_record_checked(bytes(data))
    expected = oracle(bytes(data))
    assume(fast is not None or expected is not None)
    if fast is not None:
        assert fast == expected
