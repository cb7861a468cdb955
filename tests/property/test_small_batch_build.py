"""A batch of a few records (a producer writing round-robin over many partitions sends
mostly batches of one or two) is built with the builtins, without a numpy call, and comes
out as a brute-force reading of the same lists says: every value and CreateTime back, in
order, and the header's first, smallest and largest CreateTime those of the list."""

from hypothesis import given
from hypothesis import strategies as st

from tests.helpers.python_calls import calls_by_name
from tslog.protocol._record_builder import SMALL_BATCH_RECORDS
from tslog.protocol.batch_header import parse_header
from tslog.protocol.records import build_batch, iter_records

values = st.lists(st.binary(max_size=40), min_size=1, max_size=SMALL_BATCH_RECORDS + 8)
times = st.integers(-(2**63), 2**63 - 1)


@given(values, st.data())
def test_a_small_batch_holds_what_it_was_given(vals, data):
    create_times = data.draw(st.lists(times, min_size=len(vals), max_size=len(vals)))
    batch = build_batch(vals, create_times=create_times)
    header = parse_header(batch)
    assert (header.first_create_time, header.min_create_time, header.max_create_time) == (
        create_times[0], min(create_times), max(create_times))
    assert [(r.value, r.create_time) for r in iter_records(batch)] == list(
        zip(vals, create_times))


def test_a_one_record_batch_makes_no_numpy_call():
    build_batch([b"warm"], create_times=[1])
    calls, _ = calls_by_name(lambda: build_batch([b"v" * 100], create_times=[5]))
    assert calls["frombuffer"] == calls["reduce"] == 0, calls  # 2 and 3 before
    assert calls["python"] <= 9, calls["python"]  # 12 before
