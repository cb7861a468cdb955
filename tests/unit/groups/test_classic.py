"""The classic group machine's rules one at a time, with a counter for member ids and the time
passed by hand (the random walk over all of them is test_classic_state_machine.py)."""

from __future__ import annotations

from tslog.broker.groups.classic import (
    PENDING,
    ClassicConfig,
    ClassicGroups,
    ClassicState,
    JoinResponse,
    SyncResponse,
)
from tslog.protocol.errors import ErrorCode

SESSION, REBALANCE = 1_000, 3_000


def machine() -> ClassicGroups:
    ids = iter(range(1000))
    return ClassicGroups(ClassicConfig(min_session_timeout_ms=100),
                         lambda client: f"{client}-{next(ids)}")


def join(groups, member_id, client, now, protocols=(("range", b"r"),), token=None,
         required=False):
    return groups.join("g", member_id, (client, "127.0.0.1"), SESSION, REBALANCE, "consumer",
                       protocols, required, None, token or (client, now), now)


def answers(groups) -> dict:
    return {event.token: event.response for event in groups.take_events()}


def test_the_protocol_most_members_prefer_among_those_all_support_is_chosen():
    groups = machine()
    assert join(groups, "", "a", 0, (("sticky", b"s"), ("range", b"ra"))) is PENDING
    a = answers(groups)[("a", 0)].member_id
    join(groups, "", "b", 1, (("range", b"rb"), ("roundrobin", b"x")))
    join(groups, "", "c", 1, (("range", b"rc"), ("sticky", b"y")))
    join(groups, a, "a", 2, (("sticky", b"s"), ("range", b"ra")))
    done = answers(groups)
    leader = done[("a", 2)]
    assert leader.protocol_name == "range"  # sticky: b lacks it; range: every member has it
    assert dict(leader.members) == {a: b"ra", "b-1": b"rb", "c-2": b"rc"}
    assert {done[("b", 1)].generation_id, done[("c", 1)].generation_id} == {2}


def test_members_that_do_not_rejoin_in_time_are_dropped_and_the_rest_go_on():
    groups = machine()
    join(groups, "", "a", 0)
    a = answers(groups)[("a", 0)].member_id
    groups.sync("g", 1, a, None, None, {a: b"all"}, "sync-a", 0)
    join(groups, "", "b", 500)  # a must rejoin within its rebalance timeout
    for now in range(600, 500 + REBALANCE, 900):  # a stays alive but never rejoins
        assert groups.heartbeat("g", 1, a, now) is ErrorCode.REBALANCE_IN_PROGRESS
    assert groups.next_deadline() == 500 + REBALANCE
    assert groups.advance(500 + REBALANCE - 1) == []
    assert groups.advance(500 + REBALANCE) == [("g", a)]
    b = answers(groups)[("b", 500)]
    assert (b.generation_id, b.leader, [m for m, _ in b.members]) == (2, b.member_id,
                                                                      [b.member_id])


def test_a_member_id_handed_out_must_be_used_within_the_session():
    groups = machine()
    first = join(groups, "", "a", 0, required=True)
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and groups.has_members("g")
    assert groups.advance(SESSION) == [] and not groups.has_members("g")
    late = join(groups, first.member_id, "a", SESSION + 1, required=True)
    assert late == JoinResponse(ErrorCode.UNKNOWN_MEMBER_ID, first.member_id)


def two_members_joined(groups) -> str:
    """Members a (the leader) and b ("b-1") in generation 2, waiting for their SyncGroup;
    a's member id."""
    join(groups, "", "a", 0)
    a = answers(groups)[("a", 0)].member_id
    join(groups, "", "b", 1)
    join(groups, a, "a", 2)
    answers(groups)
    return a


def test_a_leaving_leader_hands_over_and_a_rebalance_cancels_waiting_syncs():
    groups = machine()
    a = two_members_joined(groups)
    assert groups.sync("g", 2, "b-1", None, None, {}, "sync-b", 3) is PENDING
    assert groups.leave("g", [a, "ghost"], 4) == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert answers(groups) == {"sync-b": SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS)}
    join(groups, "b-1", "b", 5)
    alone = answers(groups)[("b", 5)]
    assert (alone.generation_id, alone.leader) == (3, "b-1")
    assert groups.validate_commit("g", 3, "b-1", 6) is ErrorCode.REBALANCE_IN_PROGRESS
    groups.sync("g", 3, "b-1", "consumer", "range", {"b-1": b"x"}, "sync-b2", 6)
    assert answers(groups)["sync-b2"].assignment == b"x"
    assert groups.validate_commit("g", 3, "b-1", 7) is ErrorCode.NONE
    assert groups.validate_commit("g", 2, "b-1", 7) is ErrorCode.ILLEGAL_GENERATION
    assert groups.validate_commit("g", -1, "", 7) is ErrorCode.UNKNOWN_MEMBER_ID
    assert groups.leave("g", ["b-1"], 8) == [ErrorCode.NONE]
    empty = groups.describe("g")
    assert (empty.state, empty.generation_id, empty.members) == (ClassicState.EMPTY, 4, ())
    assert groups.validate_commit("g", -1, "", 9) is ErrorCode.NONE
    assert groups.validate_commit("other", -1, "", 9) is ErrorCode.NONE
    assert groups.validate_commit("other", 1, "m", 9) is ErrorCode.ILLEGAL_GENERATION


def test_a_stable_leaders_unchanged_rejoin_rebalances_a_followers_gets_its_generation():
    """Kafka's rule: a consumer leader rejoins a Stable group, with the same metadata, when the
    topics' metadata changed since it assigned (kafka-python: its metadata snapshot), so that
    rejoin must start a rebalance; a follower's unchanged rejoin is a lost answer asked again."""
    groups = machine()
    a = two_members_joined(groups)
    groups.sync("g", 2, a, None, None, {a: b"", "b-1": b""}, "sync-a", 3)
    groups.sync("g", 2, "b-1", None, None, {}, "sync-b", 3)
    assert groups.describe("g").state is ClassicState.STABLE
    again = join(groups, "b-1", "b", 4)
    assert (again.error, again.generation_id, again.leader, again.members) == (
        ErrorCode.NONE, 2, a, ())
    assert join(groups, a, "a", 5) is PENDING
    assert groups.heartbeat("g", 2, "b-1", 6) is ErrorCode.REBALANCE_IN_PROGRESS
    join(groups, "b-1", "b", 7)
    done = answers(groups)
    assert {done[("a", 5)].generation_id, done[("b", 7)].generation_id} == {3}
    assert [m for m, _ in done[("a", 5)].members] == [a, "b-1"]
