"""A Fetch response's stored batches converted at once (``tslog_batches_to_kafka``) equal
the per-batch conversion (``tslog_to_kafka``) and the per-record oracle's batches (which
share no code with the column-wise encoder) byte for byte, over random runs of batches:
nulls, empty keys, headers, zstd sections, create times far apart, sizes that change from
record to record and from batch to batch; and whatever is corrupt in a run,
both refuse it with the same kind of error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tslog.protocol.batch_header import COMPRESSION_NONE, COMPRESSION_ZSTD, parse_header, stamp
from tslog.protocol.errors import BatchFormatError
from tslog.protocol.kafka import convert
from tslog.protocol.kafka import record_batch as rb
from tslog.protocol.records import build_batch, iter_records, split_batches
from tests.unit.protocol.kafka import per_record_oracle as oracle

maybe_bytes = st.none() | st.just(b"") | st.binary(max_size=150)
headers = st.none() | st.lists(st.tuples(st.text(max_size=4), st.binary(max_size=8)),
                               max_size=2)
times = st.one_of(st.integers(0, 1 << 42), st.integers(-(1 << 62), 1 << 62))


@st.composite
def stored_batch(draw, offset):
    """One stored tslog batch at ``offset``: stamped as a leader stamps it."""
    n = draw(st.integers(1, 90))
    same_size = draw(st.booleans())  # the fixed-size case takes the strided-copy path
    if same_size:
        values = [b"v" * draw(st.integers(0, 130))] * n
        keys = None if draw(st.booleans()) else [b"k"] * n
        pairs = None
    else:
        values = draw(st.lists(maybe_bytes, min_size=n, max_size=n))
        keys = draw(st.none() | st.lists(maybe_bytes, min_size=n, max_size=n))
        pairs = draw(st.none() | st.lists(headers, min_size=n, max_size=n))
    base = draw(times)
    created = [base + d for d in draw(st.lists(st.integers(-(1 << 20), 1 << 20), min_size=n,
                                               max_size=n))]
    codec = draw(st.sampled_from([COMPRESSION_NONE, COMPRESSION_ZSTD]))
    batch = bytearray(build_batch(values, keys=keys, create_times=created, headers=pairs,
                                  compression=codec, producer_id=draw(st.integers(-1, 9)),
                                  producer_epoch=draw(st.integers(-1, 3)),
                                  base_sequence=draw(st.integers(-1, 1000))))
    stamp(batch, offset, draw(st.integers(0, 5)), draw(st.integers(0, 1 << 42)))
    return bytes(batch), n


@st.composite
def stored_run(draw):
    batches, offset = [], draw(st.integers(0, 1 << 40))
    for _ in range(draw(st.integers(1, 6))):
        batch, n = draw(stored_batch(offset))
        batches.append(batch)
        offset += n
    return b"".join(batches)


def _per_batch(records, kind):
    return b"".join(convert.tslog_to_kafka(batch, kind) for batch in split_batches(records))


def _per_record(records, kind):
    """The oracle's Kafka batches of the stored batches, each record read one by one."""
    out = []
    for batch in split_batches(records):
        header = parse_header(batch)
        rows = list(iter_records(batch))
        out.append(oracle.encode_batch(
            [r.value for r in rows], [r.key for r in rows], [r.create_time for r in rows],
            [list(r.headers) or None for r in rows], timestamp_type=kind,
            max_timestamp=header.log_append_time if kind == rb.LOG_APPEND_TIME else None,
            base_offset=header.base_offset, partition_leader_epoch=header.leader_epoch,
            producer_id=header.producer_id, producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence))
    return b"".join(out)


KINDS = [rb.LOG_APPEND_TIME, rb.CREATE_TIME]


# Groups of one batch, of a few, of all (the default bound is 4 MiB of stored batches).
group_bytes = st.sampled_from([1, 2_000, 20_000, convert.GROUP_BYTES])


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(records=stored_run(), group=group_bytes)
def test_a_run_converts_as_each_batch_does(kind, records, group):
    converted = convert.tslog_batches_to_kafka(records, kind, group_bytes=group)
    assert converted == _per_batch(records, kind)
    assert converted == _per_record(records, kind)


def _outcome(convert_run, records, kind):
    try:
        return convert_run(records, kind)
    except BatchFormatError:
        return BatchFormatError
    except ValueError:
        return ValueError


@settings(max_examples=60, deadline=None)
@given(records=stored_run(), data=st.data())
def test_a_corrupt_run_is_refused_as_each_batch_is(records, data):
    """A flipped byte, a cut or stray bytes: the same bytes or the same error kind (the
    listener answers CORRUPT_MESSAGE for either)."""
    broken = bytearray(records)
    how = data.draw(st.sampled_from(["flip", "cut", "append"]))
    if how == "flip":
        at = data.draw(st.integers(0, len(broken) - 1))
        broken[at] ^= data.draw(st.integers(1, 255))
    elif how == "cut":
        del broken[data.draw(st.integers(1, len(broken) - 1)):]
    else:
        broken += data.draw(st.binary(min_size=1, max_size=100))
    kind, group = data.draw(st.sampled_from(KINDS)), data.draw(group_bytes)

    def at_once(records, kind):
        return convert.tslog_batches_to_kafka(records, kind, group_bytes=group)
    assert _outcome(at_once, bytes(broken), kind) == _outcome(_per_batch, bytes(broken), kind)


def test_timestamps_a_kafka_batch_cannot_hold_are_refused_alike():
    """Create times 2**63 apart fit tslog's int64s but not a varlong delta."""
    batch = bytearray(build_batch([b"a", b"b"], create_times=[-(1 << 63), (1 << 63) - 1]))
    stamp(batch, 0, 0, 5)
    for kind in KINDS:
        with pytest.raises(ValueError):
            convert.tslog_batches_to_kafka(bytes(batch), kind)
        with pytest.raises(ValueError):
            _per_batch(bytes(batch), kind)
