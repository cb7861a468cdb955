"""Hypothesis: decoding a response's batches together reads and refuses exactly what decoding
them one by one does.

``decode_batches`` checks a run of batches with one vectorised pass instead of ``check_section``
per batch. Oracles: ``iter_records`` (one ``Record`` per record, per batch) for what is read,
and ``validate_batch`` (the broker's own acceptance check) for what is refused. The Arrow
batches the Spark connector builds from it: tests/spark/test_arrow_build.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.property.test_batch_validation import lying_batches
from tests.property.test_protocol_codecs import batch_inputs
from tslog.protocol.batch_header import BatchFormatError, stamp, validate_batch
from tslog.protocol.records import build_batch, decode_batches, iter_records

REALISTIC_MS = st.integers(0, 2**42)  # create times Spark can hold in microseconds


@st.composite
def realistic_inputs(draw):
    inputs = draw(batch_inputs())
    n = len(inputs["values"])
    inputs["create_times"] = draw(st.one_of(
        st.none(), REALISTIC_MS, st.lists(REALISTIC_MS, min_size=n, max_size=n)))
    return inputs


@st.composite
def stored_responses(draw):
    """1-6 stamped batches in offset order, sometimes with gaps between them."""
    batches = []
    offset = draw(st.integers(0, 2**40))
    for inputs in draw(st.lists(realistic_inputs(), min_size=1, max_size=6)):
        batch = bytearray(build_batch(**inputs))
        stamp(batch, offset, 0, draw(REALISTIC_MS))
        batches.append(bytes(batch))
        offset += len(inputs["values"]) + draw(st.sampled_from([0, 0, 0, 1, 1000]))
    return batches


def oracle_rows(batches):
    return [record for batch in batches for record in iter_records(batch)]


@given(st.lists(st.one_of(lying_batches(), st.builds(build_batch, st.just([b"x"]))),
                min_size=1, max_size=4))
def test_the_run_is_refused_exactly_when_one_of_its_batches_is(batches):
    refused = False
    for batch in batches:
        try:
            validate_batch(batch)
        except BatchFormatError:
            refused = True
    if refused:
        with pytest.raises(BatchFormatError):
            decode_batches(batches)
    else:
        columns = decode_batches(batches)
        assert columns.row_count == len(oracle_rows(batches))


def test_no_batch_is_refused_with_a_format_error():
    with pytest.raises(BatchFormatError):
        decode_batches([])
