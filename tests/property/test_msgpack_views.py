"""Hypothesis: the zero-copy decoder agrees with msgpack itself, on messages and on garbage.

The oracle is ``messages._unpack`` (msgpack.unpackb with the broker's limits): for any input
both either fail, or both return the same object once views are turned into bytes. Large bins
must come back as views of the input, so no record byte is copied.
"""

import math

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.protocol.messages import _unpack
from tslog.protocol.msgpack_views import MAX_DEPTH, MsgpackViewError, unpack_with_views

MIN_VIEW = 16  # small, so generated bins cross it both ways

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.floats(allow_nan=False), st.floats(width=32, allow_nan=False),
    st.text(max_size=40), st.binary(max_size=64),
)
keys = st.one_of(st.text(max_size=10), st.binary(max_size=24))
objects = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.dictionaries(keys, inner, max_size=6)),
    max_leaves=40,
)


def materialised(value):
    """The object with every view turned into bytes (what msgpack itself returns)."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, list):
        return [materialised(v) for v in value]
    if isinstance(value, dict):
        return {k: materialised(v) for k, v in value.items()}
    return value


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def views_in(value):
    if isinstance(value, memoryview):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from views_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from views_in(v)


@given(objects)
def test_every_message_decodes_as_msgpack_does(obj):
    packed = msgpack.packb(obj, use_bin_type=True)
    got = unpack_with_views(packed, MIN_VIEW)
    assert same(materialised(got), _unpack(packed))


@given(objects)
def test_large_bins_are_views_of_the_input_and_small_ones_are_bytes(obj):
    buffer = bytearray(msgpack.packb(obj, use_bin_type=True))
    got = unpack_with_views(buffer, MIN_VIEW)
    for view in views_in(got):
        assert len(view) >= MIN_VIEW
        assert view.obj is buffer  # a slice of the received buffer, not a copy


@given(st.binary(max_size=200))
def test_garbage_fails_exactly_when_msgpack_fails(data):
    try:
        expected = _unpack(data)
    except Exception:
        expected = MsgpackViewError
    try:
        got = materialised(unpack_with_views(data, MIN_VIEW))
    except MsgpackViewError:
        got = MsgpackViewError
    if expected is MsgpackViewError or got is MsgpackViewError:
        assert got is expected
    else:
        assert same(got, expected)


@given(objects, st.data())
def test_a_corrupted_message_fails_exactly_when_msgpack_fails(obj, data):
    packed = bytearray(msgpack.packb(obj, use_bin_type=True))
    for _ in range(data.draw(st.integers(1, 3))):
        packed[data.draw(st.integers(0, len(packed) - 1))] = data.draw(st.integers(0, 255))
    test_garbage_fails_exactly_when_msgpack_fails.hypothesis.inner_test(bytes(packed))


@given(objects, st.data())
def test_every_truncation_of_a_message_is_refused(obj, data):
    packed = msgpack.packb(obj, use_bin_type=True)
    cut = data.draw(st.integers(0, len(packed) - 1))
    with pytest.raises(MsgpackViewError):
        unpack_with_views(packed[:cut], MIN_VIEW)


def test_a_fetch_response_keeps_its_records_in_the_receive_buffer():
    records = bytes(range(256)) * 64
    frame = bytearray(msgpack.packb([7, {"topics": [{"topic": "t", "partitions": [
        {"partition": 0, "error_code": 0, "records": records}]}]}], use_bin_type=True))
    correlation, body = unpack_with_views(frame)
    got = body["topics"][0]["partitions"][0]["records"]
    assert correlation == 7 and isinstance(got, memoryview) and got == records
    frame[-1] ^= 0xFF  # the view reads the buffer itself
    assert got[-1] == records[-1] ^ 0xFF


def test_nesting_past_the_limit_is_an_error_not_a_recursion_error():
    deep = b"\x91" * (MAX_DEPTH + 1) + b"\xc0"
    with pytest.raises(MsgpackViewError, match="nesting"):
        unpack_with_views(deep)
    assert unpack_with_views(b"\x91" * MAX_DEPTH + b"\xc0") is not None


@pytest.mark.parametrize("data, why", [
    (b"\xc1", "starts no msgpack object"),
    (b"\xd4\x01\x00", "ext"),
    (b"\xc7\x01\x05\x00", "ext payload"),
    (b"\x81\x01\x02", "map key of type int"),
    (b"\xdd\xff\xff\xff\xff", "cannot fit"),
    (b"\xc0\xc0", "after the object"),
    (b"\xa2\xff\xfe", "UTF-8"),
])
def test_refusals_say_what_is_wrong(data, why):
    with pytest.raises(MsgpackViewError, match=why):
        unpack_with_views(data)
