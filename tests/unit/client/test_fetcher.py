"""Turning Fetch answers into records without a broker: batch splitting and decoding."""

import pytest

from tslog.client._fetcher import CompletedFetch, PartitionState, decode_batch, split_batches
from tslog.client._types import ConsumerRecord, TopicPartition
from tslog.protocol.batch_header import stamp
from tslog.protocol.records import build_batch

TP = TopicPartition("t", 2)


def stored(values, base_offset, lat=5000, **options) -> bytes:
    """A batch as the broker would store it: offset and LogAppendTime stamped."""
    batch = bytearray(build_batch(values, **options))
    stamp(batch, base_offset, 0, lat)
    return bytes(batch)


def test_split_batches_ignores_a_torn_tail_and_reports_the_next_offset():
    first, second = stored([b"a", b"b"], 10), stored([b"c"], 12)
    batches, next_offset = split_batches(first + second + second[:30])
    assert [bytes(b) for b in batches] == [first, second] and next_offset == 13
    assert split_batches(b"") == ([], None)


def test_decode_skips_records_below_the_position():
    batch = stored([b"v0", b"v1", b"v2", None], 100, keys=[b"k", None, b"kk", b"x"],
                   create_times=[1, 2, 3, 4], headers=[None, [("h", b"1")], None, None])
    records = decode_batch(TP, batch, 101, (None, None))
    assert records == [
        ConsumerRecord("t", 2, 101, None, b"v1", 2, 5000, (("h", b"1"),)),
        ConsumerRecord("t", 2, 102, b"kk", b"v2", 3, 5000, ()),
        ConsumerRecord("t", 2, 103, b"x", None, 4, 5000, ()),
    ]
    assert decode_batch(TP, batch, 104, (None, None)) == []
    # Headers are immutable (shared empty tuples are safe) and nothing else is a container.
    assert all(type(r.headers) is tuple for r in records)


def test_decode_applies_deserializers_to_non_null_fields():
    batch = stored([b"1", None], 0, keys=[b"a", None], create_times=7)
    records = decode_batch(TP, batch, 0, (bytes.decode, int))
    assert [(r.key, r.value) for r in records] == [("a", 1), (None, None)]


@pytest.mark.parametrize("values", [
    [b"x" * 7] * 5,  # one width: cut by one struct call
    [b"", b"", b""],  # width zero
    [b"a", b"bb", b"a"],  # widths differ from the position on
    [b"aaa", b"a", b"b", b"c"],  # widths differ only below the position
])
@pytest.mark.parametrize("position", [0, 1, 2])
def test_values_and_keys_come_back_exactly_whatever_their_widths(values, position):
    keys = [bytes(reversed(value)) for value in values]
    times = [10 + i for i in range(len(values))]
    batch = stored(values, 40, keys=keys, create_times=times)
    records = decode_batch(TP, batch, 40 + position, (None, None))
    assert [(r.offset, r.key, r.value, r.create_time) for r in records] == [
        (40 + i, keys[i], values[i], times[i]) for i in range(position, len(values))]
    assert all(type(r.value) is bytes for r in records)
    same_time = decode_batch(TP, stored(values, 0, create_times=99), position, (None, bytes.upper))
    assert [(r.value, r.create_time) for r in same_time] == [
        (value.upper(), 99) for value in values[position:]]


def test_completed_fetch_hands_out_records_in_chunks_and_moves_the_position():
    fetch = CompletedFetch(TP, 0, [stored([b"%d" % i for i in range(5)], 0),
                                   stored([b"5", b"6"], 5)], node_id=0)
    state = PartitionState()
    state.position = 1
    assert [r.offset for r in fetch.take(state, 3, (None, None))] == [1, 2, 3]
    assert state.position == 4 and not fetch.exhausted
    assert [r.offset for r in fetch.take(state, None, (None, None))] == [4, 5, 6]
    assert state.position == 7 and fetch.exhausted


def test_a_corrupt_batch_raises_on_every_poll_until_the_user_seeks_past_it():
    import pytest

    from tslog.client.errors import CorruptMessageError

    good, bad = stored([b"a"], 0), bytearray(stored([b"b"], 1))
    bad[-1] ^= 0xFF  # breaks the CRC
    fetch = CompletedFetch(TP, 0, [good, bytes(bad)], node_id=0)
    state = PartitionState()
    state.position = 0
    assert [r.value for r in fetch.take(state, 1, (None, None))] == [b"a"]
    for _ in range(2):
        with pytest.raises(CorruptMessageError):
            fetch.take(state, None, (None, None))
        assert state.position == 1
