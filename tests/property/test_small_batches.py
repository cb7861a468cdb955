"""Hypothesis: a small batch decoded row-wise (``decode_rows``, no numpy) gives the consumer
exactly the records the column decoder gives, and a bad batch the same error.

Goal: a consumer reading partitions of one-record batches (issue 45's find by time across
1,000 partitions) decodes each without numpy's fixed costs; which decoder ran must never
show. Method: valid batches of 1 to 80 records (both sides of ``ROWS_MAX_RECORDS``), with
and without keys, nulls, headers, CreateTimes and compression, and the same batches with a
lie told where the checks look (CRC resealed, ``test_column_check.mutated_batches``). For
each, the consumer's records from every position through both decoders, with and without
deserializers, must be equal; or both decoders must raise the same exception and message.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.property.test_column_check import mutated_batches, valid_batches
from tslog.client._fetcher import CompletedFetch, PartitionState, decode_batch, records_of_rows
from tslog.client._types import TopicPartition
from tslog.protocol.records import decode_columns, decode_rows

TP = TopicPartition("t", 3)
DESERIALIZERS = [(None, None), (bytes.upper, len)]


def outcome(decode, batch: bytes):
    try:
        return "ok", decode(batch)
    except Exception as exc:  # noqa: BLE001 - the type and message are what is compared
        return type(exc).__name__, str(exc)


@given(valid_batches(), st.integers(0, 100), st.sampled_from(DESERIALIZERS))
def test_rows_and_columns_give_the_same_records(batch, position, deserialize):
    columns, rows = decode_columns(batch), decode_rows(batch)
    assert records_of_rows(TP, rows, position, deserialize) == \
        decode_batch(TP, columns, position, deserialize)


@given(mutated_batches())
def test_rows_and_columns_refuse_the_same_batches_alike(batch):
    by_columns, by_rows = outcome(decode_columns, batch), outcome(decode_rows, batch)
    assert by_columns[0] == by_rows[0]
    if by_columns[0] != "ok":
        assert by_columns[1] == by_rows[1]
    else:
        assert records_of_rows(TP, by_rows[1], 0, (None, None)) == \
            decode_batch(TP, by_columns[1], 0, (None, None))


@given(st.lists(valid_batches(), min_size=1, max_size=4), st.integers(1, 7))
def test_a_poll_then_the_rest_as_columns_skips_and_repeats_nothing(batches, limit):
    """``poll`` (records, small batches decoded row-wise) then ``poll_batches`` (columns):
    together they hand out every record once, in order."""
    offset, stamped = 0, []
    for batch in batches:
        count = decode_columns(batch).record_count
        stamped.append(_rebased(batch, offset))
        offset += count
    state = PartitionState()
    state.position = 0
    fetch = CompletedFetch(TP, 0, stamped, 0)
    taken = [r.offset for r in fetch.take(state, limit, (None, None))]
    for column_batch in fetch.take_columns(state):
        base = column_batch.columns.base_offset
        taken += range(base + column_batch.start, base + column_batch.columns.record_count)
    assert taken == list(range(offset))


def _rebased(batch: bytes, base_offset: int) -> bytes:
    """The batch as the broker stores it at ``base_offset`` (outside the CRC)."""
    return base_offset.to_bytes(8, "little", signed=True) + batch[8:]
