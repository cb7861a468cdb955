"""``packing.pack`` writes what ``msgpack.packb`` writes, whatever the thread and history.

Goal: every request and answer is packed with a Packer reused per thread; a reused Packer
that kept bytes of an earlier message (one that failed halfway, or a large one) would put
them on the wire, and one shared by two threads would mix their messages. Method:
hypothesis values packed both ways, after a failed pack, after a large one, and from
several threads at once.
"""

from __future__ import annotations

import threading

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tslog.protocol.packing import KEEP_BUFFER_BYTES, pack

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats()
    | st.text(max_size=20) | st.binary(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_pack_writes_what_packb_writes(value):
    assert pack(value) == msgpack.packb(value, use_bin_type=True)


@settings(max_examples=100, deadline=None)
@given(VALUES, st.sampled_from([object(), 2**64, {1j: 1}]))
def test_a_failed_pack_leaves_nothing_behind(value, unpackable):
    with pytest.raises((TypeError, OverflowError)):
        pack([value, unpackable])
    assert pack(value) == msgpack.packb(value, use_bin_type=True)


def test_a_large_message_then_small_ones():
    large = b"x" * (KEEP_BUFFER_BYTES + 1)
    assert pack([large]) == msgpack.packb([large], use_bin_type=True)
    assert pack({"a": 1}) == msgpack.packb({"a": 1}, use_bin_type=True)


def test_threads_packing_at_once_get_their_own_bytes():
    failures = []

    def work(index: int) -> None:
        for round_ in range(2000):
            value = {"thread": index, "round": round_, "pad": "p" * (index * 37 % 300)}
            if msgpack.unpackb(pack(value)) != value:
                failures.append((index, round_))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
