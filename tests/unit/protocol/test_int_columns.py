"""``int_columns``: int64 columns as bytes (OffsetsAtTimes v1's packed offsets)."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.protocol.int_columns import ColumnError, pack_int64, unpack_int64

INT64 = st.integers(-(2 ** 63), 2 ** 63 - 1)


@given(st.lists(INT64, max_size=300))
def test_a_column_round_trips_as_little_endian_int64(values):
    packed = pack_int64(values)
    assert packed == struct.pack(f"<{len(values)}q", *values)
    assert unpack_int64(packed) == values
    assert unpack_int64(memoryview(packed)) == values


@given(st.binary(max_size=100).filter(lambda data: len(data) % 8))
def test_bytes_that_are_not_whole_values_are_refused(data):
    with pytest.raises(ColumnError):
        unpack_int64(data)


@pytest.mark.parametrize("value", [2 ** 63, -(2 ** 63) - 1])
def test_a_value_past_int64_is_refused(value):
    with pytest.raises(OverflowError):
        pack_int64([value])
