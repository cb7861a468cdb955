"""Hypothesis: the one-record fast path (``_one_record.first_look``) never accepts a
batch the general check refuses, and accepts with the general check's very header and running
CRC (issue 37, small batches).

Goal: which path validated a batch must never show, for valid and invalid batches alike.
Method: the general check is ``validate_batch_for_stamping`` with the fast path switched off
(the step-by-step oracle); the batches are the column-check property's (honest batches of 1
to 80 records, and the same with one lie told where the checks look, CRC resealed), plus
one-record batches with any header field, section size, CreateTime or key or value length
rewritten, or any byte flipped, or cut or extended (CRC resealed or not). For each: if the fast path vouches for the batch, the oracle must accept it with the
same header fields and running CRC; and the broker's check with the fast path on must give
the oracle's verdict, error type and message included. A last property shows the fast path
is not vacuous: it vouches for every honest plain one-record batch.
"""

from __future__ import annotations

import contextlib
import struct

from hypothesis import given, note
from hypothesis import strategies as st

from tests.property.test_batch_validation import reseal_crc
from tests.property.test_column_check import mutated_batches, outcome, valid_batches
from tslog.protocol import batch_header
from tslog.protocol._one_record import HEADER_FIELDS, ONE_RECORD, one_record_verdict
from tslog.protocol.batch_header import HEADER_STRUCT, validate_batch_for_stamping
from tslog.protocol.records import build_batch

INT64 = st.integers(-(2**63), 2**63 - 1)


@contextlib.contextmanager
def fast_path_off():
    """The general, step-by-step check alone (its own header parse too): the oracle the
    fast path must agree with."""
    saved = batch_header.first_look
    batch_header.first_look = lambda batch: (None, None)
    try:
        yield
    finally:
        batch_header.first_look = saved


def oracle(batch):
    with fast_path_off():
        return outcome(validate_batch_for_stamping, batch)


@st.composite
def one_record_batches(draw) -> bytes:
    """A one-record batch, honest or with a header field rewritten or a byte flipped."""
    value = draw(st.one_of(st.none(), st.binary(max_size=40)))
    key = draw(st.one_of(st.none(), st.binary(max_size=8)))
    batch = bytearray(build_batch([value], keys=[key], create_times=[draw(INT64)]))
    how = draw(st.sampled_from(["none", "field", "section", "section", "byte", "truncate",
                                "extend"]))
    note(f"mutation: {how}")
    if how == "section":  # the section's sizes, the CreateTime, the key or value length
        fields = list(ONE_RECORD.unpack_from(batch))
        index = draw(st.integers(HEADER_FIELDS, len(fields) - 1))
        old = fields[index]
        fields[index] = draw(st.sampled_from([old - 1, old + 1, -1, -2, 0]))
        with contextlib.suppress(struct.error):  # out of the field's range: left as it was
            ONE_RECORD.pack_into(batch, 0, *fields)
    elif how == "field":
        fields = list(HEADER_STRUCT.unpack_from(batch))
        index = draw(st.integers(2, len(fields) - 1))
        fields[index] = draw(st.integers(-3, 3) | st.integers(0, 2**7))
        with contextlib.suppress(struct.error):  # out of the field's range: left as it was
            HEADER_STRUCT.pack_into(batch, 0, *fields)
    elif how == "byte":
        position = draw(st.integers(0, len(batch) - 1))
        batch[position] = draw(st.integers(0, 255))
    elif how == "truncate":
        batch = batch[:draw(st.integers(0, len(batch) - 1))]
    elif how == "extend":
        batch += draw(st.binary(min_size=1, max_size=4))
    if len(batch) >= 80 and draw(st.booleans()):
        batch = reseal_crc(batch)
    return bytes(batch)


def assert_agrees(batch) -> None:
    expected = oracle(batch)
    fast = one_record_verdict(batch)
    note(f"oracle: {expected}, fast: {fast}")
    if fast is not None:
        assert expected[0] == "accepted"
        header, running = expected[1]
        assert fast == (tuple(header), running)
    assert outcome(validate_batch_for_stamping, batch) == expected


@given(one_record_batches())
def test_the_fast_path_agrees_with_the_general_check_on_one_record_batches(batch):
    assert_agrees(batch)


@given(mutated_batches())
def test_the_fast_path_agrees_with_the_general_check_on_mutated_batches(batch):
    assert_agrees(batch)


@given(valid_batches())
def test_the_fast_path_agrees_with_the_general_check_on_honest_batches(batch):
    assert_agrees(batch)


@given(st.one_of(st.none(), st.binary(max_size=64)), st.one_of(st.none(), st.binary(max_size=8)),
       INT64)
def test_the_fast_path_vouches_for_every_plain_one_record_batch(value, key, create_time):
    batch = build_batch([value], keys=[key], create_times=[create_time])
    assert one_record_verdict(batch) is not None
    assert one_record_verdict(memoryview(batch)) is not None
