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
