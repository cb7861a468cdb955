"""A single broker's committed offsets on disk (``GroupOffsetStore``): what a deleted group or
a deleted topic takes away stays away when the data directory is opened again."""

from __future__ import annotations

from tslog.broker.groups.offset_files import GroupOffsetStore


async def test_a_deleted_group_is_gone_after_a_reopen_and_others_stay(tmp_path):
    store = GroupOffsetStore(tmp_path)
    await store.commit("gone", {("t", 0): (5, ""), ("u", 1): (2, "m")})
    await store.commit("kept", {("t", 0): (7, "")})
    await store.forget_group("gone")
    assert store.fetch("gone") == {} and "gone" not in store.all_groups()
    reopened = GroupOffsetStore(tmp_path)
    assert reopened.all_groups() == {"kept": {("t", 0): (7, "")}}
    await reopened.forget_group("never")  # nothing to delete: nothing happens


async def test_a_group_whose_last_topic_is_deleted_has_no_offsets_left(tmp_path):
    store = GroupOffsetStore(tmp_path)
    await store.commit("g", {("t", 0): (5, ""), ("u", 0): (1, "")})
    await store.forget_topic("g", "t")
    assert GroupOffsetStore(tmp_path).all_groups() == {"g": {("u", 0): (1, "")}}
    await store.forget_topic("g", "u")
    assert "g" not in store.all_groups()
    assert GroupOffsetStore(tmp_path).all_groups() == {}


async def test_deleted_partitions_stay_deleted_after_a_reopen(tmp_path):
    """Kafka's OffsetDelete: the named partitions go, the group's others stay; the last one
    gone takes the group with it."""
    store = GroupOffsetStore(tmp_path)
    await store.commit("g", {("t", 0): (5, ""), ("t", 1): (6, ""), ("t", 10): (7, "")})
    await store.forget_partitions("g", [("t", 1)])
    assert GroupOffsetStore(tmp_path).all_groups() == {"g": {("t", 0): (5, ""),
                                                             ("t", 10): (7, "")}}
    await store.forget_partitions("g", [("t", 0), ("t", 10)])
    assert "g" not in store.all_groups()
    assert GroupOffsetStore(tmp_path).all_groups() == {}
