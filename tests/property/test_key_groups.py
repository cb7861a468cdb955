"""Hypothesis: a keyed ``send_batch`` sends each record where ``send`` would send it, in order.

Long key lists are grouped by partition column-wise (numpy over ``map(crc32c, ...)``), short
ones by a loop; both must give every partition exactly the positions whose key
``key_partition`` sends there (null keys: the sticky partition), in the order given."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tslog.client._batching import KEY_LOOP_MAX, _key_groups_by_column
from tslog.client._partitioner import key_partition

keys_lists = st.lists(st.one_of(st.none(), st.binary(max_size=8),
                                st.binary(max_size=8).map(bytearray)),
                      min_size=KEY_LOOP_MAX + 1, max_size=300)


def oracle(keys: list, partitions: int, sticky: int) -> dict:
    groups: dict = {}
    for position, key in enumerate(keys):
        target = sticky if key is None else key_partition(key, partitions)
        groups.setdefault(target, []).append(position)
    return groups


@given(keys_lists, st.integers(1, 40), st.data())
def test_column_grouping_matches_one_key_at_a_time(keys, partitions, data):
    sticky = data.draw(st.integers(0, partitions - 1)) if None in keys else -1
    assert _key_groups_by_column(keys, partitions, sticky) == oracle(keys, partitions, sticky)
