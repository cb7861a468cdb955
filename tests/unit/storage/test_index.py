"""The memory-mapped index files against a sorted-list oracle."""

import bisect
import os

from hypothesis import given
from hypothesis import strategies as st

from tslog.broker.storage.index import OffsetIndex, TimestampIndex


def assert_found(index: TimestampIndex, oracle: list[int], probe: int) -> None:
    """Both searches by time agree with bisect on the sorted list of the appended keys; entry
    i was appended with relative offset i (as every test here appends)."""
    i = bisect.bisect_left(oracle, probe)
    assert index.count_keys_below(probe) == i
    assert index.search(probe) == ((i, oracle[i], i) if i < len(oracle) else (i, None, None))


@given(
    timestamps=st.lists(st.integers(0, 2**40), max_size=300).map(sorted),
    probes=st.lists(st.integers(-1, 2**40 + 1), max_size=50),
    capacity_entries=st.integers(1, 64),
)
def test_timestamp_search_matches_bisect_on_a_sorted_list(tmp_path_factory, timestamps, probes, capacity_entries):
    path = tmp_path_factory.mktemp("idx") / "0.timeindex"
    index = TimestampIndex(path)
    index.make_writable(capacity_entries * 16)  # smaller than needed: appends must grow it
    for i, ts in enumerate(timestamps):
        index.append(ts, i, i * 10)
        if i % 7 == 0:  # searched while it grows: the sampled first level follows the appends
            for probe in probes[:5]:
                assert_found(index, timestamps[: i + 1], probe)
    for probe in probes + timestamps:
        assert_found(index, timestamps, probe)
        assert index.count_keys_at_or_below(probe) == bisect.bisect_right(timestamps, probe)
    index.seal()
    assert os.path.getsize(path) == 16 * len(timestamps)
    for probe in probes:
        assert_found(index, timestamps, probe)
    index.close()
    reopened = TimestampIndex(path)
    assert reopened.entries == len(timestamps)
    assert [reopened.entry(i)[0] for i in range(reopened.entries)] == timestamps
    for probe in probes:
        assert_found(reopened, timestamps, probe)
    reopened.close()


@given(
    timestamps=st.lists(st.integers(0, 2**40), min_size=1, max_size=200).map(sorted),
    keep=st.integers(0, 200),
    more=st.lists(st.integers(0, 2**40), max_size=60).map(sorted),
    probes=st.lists(st.integers(-1, 2**41), max_size=30),
)
def test_timestamp_search_after_truncation_and_more_appends(tmp_path_factory, timestamps, keep, more, probes):
    """A follower truncates an index and appends again: searches before and after agree with
    a sorted list cut and extended the same way."""
    index = TimestampIndex(tmp_path_factory.mktemp("idx") / "0.timeindex")
    index.make_writable(1 << 12)
    for i, ts in enumerate(timestamps):
        index.append(ts, i, i * 10)
    oracle = list(timestamps)
    for probe in probes:
        assert_found(index, oracle, probe)
    index.truncate_entries(keep)
    oracle = oracle[:keep]
    start = oracle[-1] if oracle else 0
    for ts in more:
        index.append(start + ts, len(oracle), len(oracle) * 10)
        oracle.append(start + ts)
    for probe in probes + oracle:
        assert_found(index, oracle, probe)
    index.close()


@given(offsets=st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=200).map(sorted))
def test_offset_and_position_searches(tmp_path_factory, offsets):
    path = tmp_path_factory.mktemp("idx") / "0.index"
    index = OffsetIndex(path)
    index.make_writable(1 << 12)
    positions = [3 * o for o in range(len(offsets))]
    for offset, position in zip(offsets, positions):
        index.append(offset, position)
    for probe in offsets + [o + 1 for o in offsets] + [0, 2**31 - 1]:
        assert index.count_keys_at_or_below(probe) == bisect.bisect_right(offsets, probe)
        # Segment.position_of's form of the same question: the sampled search, key + 1
        assert index.count_keys_below(probe + 1) == bisect.bisect_right(offsets, probe)
    assert [index.position(i) for i in range(index.entries)] == positions
    for probe in positions + [p + 1 for p in positions]:
        assert index.count_positions_at_or_below(probe) == bisect.bisect_right(positions, probe)
    index.truncate_entries(len(offsets) // 2)
    assert index.entries == len(offsets) // 2
    index.close()
    assert os.path.getsize(path) == 8 * (len(offsets) // 2)


def test_a_file_with_a_partial_entry_is_reported_torn(tmp_path):
    path = tmp_path / "0.timeindex"
    path.write_bytes(bytes(16 * 3 + 5))
    index = TimestampIndex(path)
    assert index.is_torn and index.entries == 3
    index.close()
