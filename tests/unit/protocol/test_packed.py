"""Answers put together from kept packed pieces (``packed.py``) are byte for byte what
``msgpack.packb`` writes for the same values.

Goal: a Metadata answer is spliced from partition lists packed when they were built; a
peer must not be able to tell it from a packed dict. Method: hypothesis maps and lists,
spliced and concatenated, against ``msgpack.packb`` of the whole; the array header at each
of its sizes' edges; and the codec's frame of a ``PackedAnswer`` against
``encode_response`` of the same dict.
"""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tslog.protocol.errors import LocalProtocolError
from tslog.protocol.messages import ApiKey, RequestHeader, encode_response
from tslog.protocol.packed import (PackedAnswer, array_header, packed_array, response_frame,
                                   spliced)
from tslog.protocol.packing import pack
from tslog.protocol.server_codec import NATIVE_CODEC

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=20)
    | st.binary(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=4),
    max_leaves=20)


def packb(value) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8), VALUES, max_size=8), st.text(max_size=8),
       st.lists(VALUES, max_size=8))
def test_a_spliced_value_packs_as_the_whole_map(head, key, value):
    head.pop(key, None)
    whole = {**head, key: value}
    assert spliced({**head, key: []}, key, packb(value)) == packb(whole)


@settings(max_examples=100, deadline=None)
@given(st.lists(VALUES, max_size=40))
def test_an_array_of_packed_items_packs_as_the_list(items):
    assert packed_array([packb(item) for item in items]) == packb(items)


@pytest.mark.parametrize("count", [0, 1, 15, 16, 17, 0xFFFF, 0x10000, 0x10001])
def test_the_array_header_is_msgpacks_at_each_size_edge(count):
    items = [None] * count
    assert array_header(count) + b"\xc0" * count == packb(items)


@pytest.mark.parametrize("head, key", [({"a": [], "b": 1}, "a"), ({"a": 1, "b": [1]}, "b"),
                                       ({"a": 1}, "b")])
def test_splicing_refuses_a_map_that_does_not_end_in_an_empty_list(head, key):
    with pytest.raises(ValueError):
        spliced(head, key, b"\x90")


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**31 - 1), st.dictionaries(st.text(max_size=8), VALUES, max_size=8))
def test_the_codec_sends_a_packed_answer_as_encode_response_would(correlation_id, body):
    answer = PackedAnswer(body, packb(body))
    header = RequestHeader(ApiKey.METADATA, 0, correlation_id, "test")
    frame = b"".join(NATIVE_CODEC.encode(header, answer, False))
    assert frame == encode_response(correlation_id, body)
    assert answer == body and pack(answer) == answer.packed


def test_a_packed_answer_over_the_frame_limit_is_a_local_protocol_error():
    class Huge(bytes):
        def __len__(self):
            return 2**32

    with pytest.raises(LocalProtocolError):
        response_frame(1, PackedAnswer({}, Huge(b"\x80")))
