"""Records of one shape (one key size, one value size, no headers): the 2-D fast paths in
both directions answer for them, and answer what the per-record oracle does, byte for
byte; a batch changed anywhere decodes as the oracle decodes it or is refused where the
oracle refuses it. The fast paths are asserted to be taken, so a regression that silently
falls back to the general path fails here rather than only in a benchmark."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from tslog.protocol.kafka import record_batch as rb
from tslog.protocol.kafka import record_columns as rc
from tslog.protocol.kafka.same_layout import decode_runs, predicted_runs
from tslog.protocol.kafka.same_layout_encode import layout_same
from tests.unit.protocol.kafka import per_record_oracle as oracle

# Deltas near one another (one or two bytes) or anywhere a varlong delta still fits.
deltas = st.one_of(st.integers(0, 200), st.integers(-(1 << 40), 1 << 40),
                   st.integers(-(1 << 61), 1 << 61))


@st.composite
def same_shape(draw):
    """(values, keys, times) of records that all have one key size and one value size."""
    n = draw(st.integers(1, 300))  # past 64: the offset deltas' varints widen mid-batch
    value_size = draw(st.integers(-1, 300))
    key_size = draw(st.integers(-1, 20))
    values = [None if value_size < 0 else draw(st.binary(min_size=value_size,
                                                         max_size=value_size))] * n
    keys = None if key_size < 0 else [bytes([i % 251]) * key_size for i in range(n)]
    if draw(st.booleans()):
        times = draw(st.integers(0, 1 << 42))
    else:
        base = draw(st.integers(0, 1 << 42))
        spread = draw(deltas)
        times = [base + (spread * i) // max(n - 1, 1) for i in range(n)]
    return values, keys, times


def _runs(body: bytes, count: int):
    data = np.frombuffer(body + bytes(rc._PAD), dtype=np.uint8)
    runs, end = rc._size_runs(body, data, count)
    return data, runs, end


@settings(max_examples=100, deadline=None)
@given(shape=same_shape())
def test_same_shaped_records_decode_on_the_fast_path_as_the_oracle(shape):
    values, keys, times = shape
    data = oracle.encode_batch(values, keys, times)
    n = len(values)
    body = data[rb.HEADER_SIZE:]
    array, runs, end = _runs(body, n)
    if end == len(body) and len(runs) <= rc._SAME_LAYOUT_RUNS:
        assert decode_runs(body, array, runs) is not None  # the fast path answers
    if isinstance(times, int):  # deltas of one width: runs change only with the offsets'
        assert predicted_runs(body, n) == runs
    decoded, expected = rb.decode_batch(data), oracle.decode_batch(data)
    assert tuple(decoded) == tuple(expected)


@settings(max_examples=200, deadline=None)
@given(shape=same_shape(), where=st.integers(0, 1 << 20), byte=st.integers(0, 255))
def test_a_same_shaped_batch_changed_anywhere_decodes_as_the_oracle_or_is_refused(
        shape, where, byte):
    values, keys, times = shape
    body = bytearray(oracle.encode_batch(values, keys, times)[rb.HEADER_SIZE:])
    body[where % len(body)] = byte
    oracle.assert_decodes_as_the_oracle(rc.decode_records, bytes(body), len(values))


@settings(max_examples=100, deadline=None)
@given(shape=same_shape())
def test_same_shaped_records_encode_on_the_fast_path_as_the_oracle(shape):
    values, keys, times = shape
    n = len(values)
    stamps = np.full(n, times, dtype=np.int64) if isinstance(times, int) \
        else np.array(times, dtype=np.int64)
    key_length = -1 if keys is None else len(keys[0])
    value_length = -1 if values[0] is None else len(values[0])
    laid = layout_same(rc._zigzag(stamps - stamps[0]), rc._zigzag(np.arange(n)), key_length,
                       b"".join(keys or []), value_length, b"".join(v or b"" for v in values),
                       None)
    expected = oracle.encode_batch(values, keys, times)
    assert rb.encode_batch(values, keys, times) == expected
    if laid is None:  # only when the records' length varints differ in width
        _, runs, _ = _runs(expected[rb.HEADER_SIZE:], n)
        assert len({run.prefix for run in runs}) > 1
        return
    assert laid[0].tobytes() == expected[rb.HEADER_SIZE:]
