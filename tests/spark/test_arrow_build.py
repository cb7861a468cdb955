"""Hypothesis: the Spark connector's Arrow batch of any row range of a response holds exactly
those records (oracle: ``iter_records`` per batch), with offsets that run on or jump between
batches, null keys and values, headers, and compressed batches."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

import pyarrow as pa  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.property.test_many_batches import oracle_rows, stored_responses  # noqa: E402
from tslog.protocol.records import decode_batches  # noqa: E402
from tslog.spark_connector._arrow import arrow_schema, build_record_batch  # noqa: E402


@given(stored_responses(), st.data(), st.booleans())
def test_an_arrow_batch_of_any_row_range_holds_those_records(batches, data, include_headers):
    columns = decode_batches(batches)
    rows = oracle_rows(batches)
    assert columns.row_count == len(rows)
    first = data.draw(st.integers(0, len(rows) - 1))
    end = data.draw(st.integers(first + 1, len(rows)))
    batch = build_record_batch(columns, first, end, "topic-a", 3, include_headers,
                               arrow_schema(include_headers))
    batch.validate(full=True)
    want = rows[first:end]
    assert batch.column("key").to_pylist() == [r.key for r in want]
    assert batch.column("value").to_pylist() == [r.value for r in want]
    assert batch.column("offset").to_pylist() == [r.offset for r in want]
    assert batch.column("timestamp").cast(pa.int64()).to_pylist() == [
        r.log_append_time * 1000 for r in want]
    assert batch.column("createTime").cast(pa.int64()).to_pylist() == [
        r.create_time * 1000 for r in want]
    assert set(batch.column("topic").to_pylist()) == {"topic-a"}
    assert set(batch.column("partition").to_pylist()) == {3}
    if include_headers:
        assert batch.column("headers").to_pylist() == [
            [{"key": k, "value": v} for k, v in r.headers] or None for r in want]


def test_pieces_that_do_not_run_on_are_built_one_batch_at_a_time():
    from tslog.protocol.batch_header import stamp
    from tslog.protocol.records import build_batch
    from tslog.spark_connector._fetch import _decoded

    batches = []
    for base, values in ((0, [b"a", b"b", b"c"]), (3, [b"d", b"e", b"f"])):
        batch = bytearray(build_batch(values))
        stamp(batch, base, 0, 1_700_000_000_000)
        batches.append(bytes(batch))
    # The second piece starts inside its batch: only a damaged log (overlapping batches)
    # gives such pieces, and they must still yield exactly the rows asked for.
    slices = list(_decoded([(batches[0], 1, 3), (batches[1], 1, 2)]))
    assert [(columns.row_count, first, end) for columns, first, end in slices] == [
        (3, 1, 3), (3, 1, 2)]
    built = [build_record_batch(columns, first, end, "t", 0, False, arrow_schema(False))
             for columns, first, end in slices]
    assert [b.column("value").to_pylist() for b in built] == [[b"b", b"c"], [b"e"]]
    assert [b.column("offset").to_pylist() for b in built] == [[1, 2], [4]]
    whole = list(_decoded([(batches[0], 1, 3), (batches[1], 0, 2)]))
    assert [(first, end) for _, first, end in whole] == [(1, 5)]
