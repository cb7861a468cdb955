"""The assignors: every partition of a subscribed topic gets exactly one eligible owner, the
uniform assignor keeps partitions where they are and stays balanced, and the range assignor
lays partitions out as Kafka's RangeAssignor does.

Method: hand-checked layouts for the cases people reason about (3 members on 6 partitions,
Kafka's documented range example, one member leaving or joining), then hypothesis over random
subscriptions, partition counts and current assignments for the general properties.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tslog.broker.groups import range_assign, uniform_assign

TOPICS = ["a", "b", "c"]


def counts(assignment):
    return {member: len(partitions) for member, partitions in assignment.items()}


def test_three_members_on_six_partitions_get_two_each():
    target = uniform_assign({"m1": ["t"], "m2": ["t"], "m3": ["t"]}, {"t": 6}, {})
    assert counts(target) == {"m1": 2, "m2": 2, "m3": 2}
    assert set().union(*target.values()) == {("t", p) for p in range(6)}


def test_a_member_leaving_moves_only_its_partitions():
    before = uniform_assign({"m1": ["t"], "m2": ["t"], "m3": ["t"]}, {"t": 6}, {})
    after = uniform_assign({"m1": ["t"], "m3": ["t"]}, {"t": 6}, before)
    for member in ("m1", "m3"):
        assert before[member] <= after[member]
    assert counts(after) == {"m1": 3, "m3": 3}


def test_a_member_joining_takes_partitions_only_from_the_heaviest():
    before = uniform_assign({"m1": ["t"], "m2": ["t"]}, {"t": 6}, {})
    after = uniform_assign({"m1": ["t"], "m2": ["t"], "m3": ["t"]}, {"t": 6}, before)
    assert counts(after) == {"m1": 2, "m2": 2, "m3": 2}
    assert after["m1"] <= before["m1"] and after["m2"] <= before["m2"]


def test_the_same_inputs_give_the_same_target_again():
    subscriptions = {"m1": ["a", "b"], "m2": ["b"], "m3": ["a", "c"]}
    partitions = {"a": 5, "b": 3, "c": 4}
    first = uniform_assign(subscriptions, partitions, {})
    assert uniform_assign(subscriptions, partitions, first) == first
    assert uniform_assign(dict(reversed(subscriptions.items())), partitions, {}) == first


def test_uneven_subscriptions_are_balanced_where_topics_allow():
    # m2 can only take b's two partitions; m1 takes all of a and nothing of b would help
    target = uniform_assign({"m1": ["a", "b"], "m2": ["b"]}, {"a": 4, "b": 2}, {})
    assert target == {"m1": {("a", 0), ("a", 1), ("a", 2), ("a", 3)},
                      "m2": {("b", 0), ("b", 1)}}


def test_partitions_of_missing_topics_and_unsubscribed_members():
    target = uniform_assign({"m1": ["gone"], "m2": []}, {"t": 3}, {"m1": [("gone", 0)]})
    assert target == {"m1": frozenset(), "m2": frozenset()}
    assert uniform_assign({}, {"t": 3}, {}) == {}


def test_range_matches_kafkas_documented_layout():
    # Kafka's RangeAssignor javadoc: C0, C1 subscribe to t0 and t1, 3 partitions each
    target = range_assign({"C1": ["t0", "t1"], "C0": ["t0", "t1"]}, {"t0": 3, "t1": 3}, {})
    assert target == {"C0": {("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)},
                      "C1": {("t0", 2), ("t1", 2)}}


def test_range_per_topic_with_extra_partitions_to_the_first_members():
    target = range_assign({"m1": ["t"], "m2": ["t"], "m3": ["t", "u"]}, {"t": 8, "u": 2}, {})
    assert target == {"m1": {("t", 0), ("t", 1), ("t", 2)},
                      "m2": {("t", 3), ("t", 4), ("t", 5)},
                      "m3": {("t", 6), ("t", 7), ("u", 0), ("u", 1)}}


@st.composite
def group_inputs(draw):
    members = draw(st.lists(st.sampled_from([f"m{i}" for i in range(7)]), unique=True,
                            max_size=6))
    subscriptions = {m: draw(st.lists(st.sampled_from(TOPICS), unique=True)) for m in members}
    partitions = {t: draw(st.integers(0, 9)) for t in TOPICS}
    current = {m: draw(st.lists(st.tuples(st.sampled_from(TOPICS + ["x"]), st.integers(0, 9)),
                                max_size=8)) for m in members}
    return subscriptions, partitions, current


def check_complete(subscriptions, partitions, target):
    assert set(target) == set(subscriptions)
    seen = []
    for member, owned in target.items():
        for topic, partition in owned:
            assert topic in subscriptions[member] and 0 <= partition < partitions[topic]
            seen.append((topic, partition))
    expected = {(t, p) for topics in subscriptions.values() for t in topics
                for p in range(partitions.get(t, 0))}
    assert sorted(seen) == sorted(expected)


@given(group_inputs())
def test_uniform_is_complete_balanced_and_sticky(inputs):
    subscriptions, partitions, current = inputs
    target = uniform_assign(subscriptions, partitions, current)
    check_complete(subscriptions, partitions, target)
    for giver, owned in target.items():  # no partition could narrow a gap of two or more
        for receiver in target:
            if len(owned) > len(target[receiver]) + 1:
                assert not [tp for tp in owned if tp[0] in subscriptions[receiver]]
    assert uniform_assign(subscriptions, partitions, target) == target


@given(group_inputs(), st.data())
def test_uniform_removing_a_member_moves_only_its_partitions(inputs, data):
    subscriptions, partitions, _ = inputs
    homogeneous = {member: ["a", "b"] for member in subscriptions}
    before = uniform_assign(homogeneous, partitions, {})
    if not before:
        return
    leaving = data.draw(st.sampled_from(sorted(before)))
    rest = {m: topics for m, topics in homogeneous.items() if m != leaving}
    after = uniform_assign(rest, partitions, before)
    for member in rest:
        assert before[member] <= after[member]


@given(group_inputs())
def test_range_is_complete(inputs):
    subscriptions, partitions, current = inputs
    check_complete(subscriptions, partitions, range_assign(subscriptions, partitions, current))
