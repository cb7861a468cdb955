"""Kafka's wire primitives: every writer's output reads back to the same value, truncated
input raises KafkaDecodeError only, and the varint forms match Kafka's documented bytes."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, strategies as st

from tslog.protocol.kafka import primitives as p
from tslog.protocol.kafka.errors import KafkaDecodeError

CASES = [
    ("int8", st.integers(-128, 127)),
    ("int16", st.integers(-(1 << 15), (1 << 15) - 1)),
    ("uint16", st.integers(0, 0xFFFF)),
    ("int32", st.integers(-(1 << 31), (1 << 31) - 1)),
    ("uint32", st.integers(0, 0xFFFFFFFF)),
    ("int64", st.integers(-(1 << 63), (1 << 63) - 1)),
    ("float64", st.floats(allow_nan=False)),
    ("bool", st.booleans()),
    ("varint", st.integers(-(1 << 31), (1 << 31) - 1)),
    ("varlong", st.integers(-(1 << 63), (1 << 63) - 1)),
    ("uvarint", st.integers(0, (1 << 32) - 1)),
    ("uuid", st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1))),
    ("string", st.text(max_size=40)),
    ("nullable_string", st.none() | st.text(max_size=40)),
    ("compact_string", st.text(max_size=40)),
    ("compact_nullable_string", st.none() | st.text(max_size=40)),
    ("bytes", st.binary(max_size=300)),
    ("nullable_bytes", st.none() | st.binary(max_size=300)),
    ("compact_bytes", st.binary(max_size=300)),
    ("compact_nullable_bytes", st.none() | st.binary(max_size=300)),
]


@pytest.mark.parametrize("name,values", CASES, ids=[name for name, _ in CASES])
@given(data=st.data())
def test_round_trip_and_truncation(name, values, data):
    value = data.draw(values)
    out = bytearray(b"\x07")  # a leading byte: readers must honour the position
    getattr(p, f"write_{name}")(out, value)
    read = getattr(p, f"read_{name}")
    decoded, end = read(bytes(out), 1)
    assert end == len(out)
    assert decoded == value
    cut = data.draw(st.integers(1, len(out) - 1))
    with pytest.raises(KafkaDecodeError):
        read(bytes(out[:cut]), 1)


@pytest.mark.parametrize("value,encoded", [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"),
                                           (-64, b"\x7f"), (64, b"\x80\x01"),
                                           (300, b"\xd8\x04")])
def test_zigzag_varints_match_kafkas_bytes(value, encoded):
    out = bytearray()
    p.write_varint(out, value)
    assert bytes(out) == encoded


@given(count=st.none() | st.integers(0, 50), compact=st.booleans())
def test_array_lengths(count, compact):
    out = bytearray()
    p.write_array_length(out, count, compact)
    out += b"\x00" * (count or 0)
    assert p.read_array_length(bytes(out), 0, compact)[0] == count


def test_a_lying_array_length_is_refused_before_any_element():
    with pytest.raises(KafkaDecodeError):
        p.read_array_length(b"\x7f\xff\xff\xff", 0, compact=False)


@given(fields=st.dictionaries(st.integers(0, 1000), st.binary(max_size=20), max_size=5))
def test_tagged_fields(fields):
    out = bytearray()
    p.write_tagged_fields(out, fields)
    decoded, end = p.read_tagged_fields(bytes(out), 0)
    assert end == len(out) and decoded == fields


def test_tagged_fields_out_of_order_are_refused():
    with pytest.raises(KafkaDecodeError):
        p.read_tagged_fields(b"\x02\x05\x00\x01\x00", 0)


def test_invalid_utf8_is_a_decode_error():
    with pytest.raises(KafkaDecodeError):
        p.read_string(b"\x00\x01\xff", 0)


def test_an_overlong_varint_is_a_decode_error():
    with pytest.raises(KafkaDecodeError):
        p.read_varint(b"\xff" * 6, 0)
