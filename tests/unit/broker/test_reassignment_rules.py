"""The reassignment rules (``cluster/reassignment.py``) on their own: what a start, a cancel
and a completion write, and the invariants that make a move safe, checked by Hypothesis
over random replica sets, ISRs and live brokers against a brute-force statement of each
rule; and the etcd JSON of a state with a reassignment round-trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tslog.broker.cluster.reassignment import (
    ReassignmentError,
    adding_replicas,
    cancelled,
    completed,
    preferred,
    original_replicas,
    removing_replicas,
    started,
)
from tslog.broker.cluster.records import decode_state, encode_state
from tslog.broker.cluster.view import PartitionState
from tslog.protocol.errors import ErrorCode

BROKERS = list(range(6))
replica_sets = st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True)


def state(replicas, isr=None, leader=None, epoch=3) -> PartitionState:
    replicas = tuple(replicas)
    isr = replicas if isr is None else tuple(isr)
    return PartitionState("t", 0, replicas[0] if leader is None else leader, epoch, isr,
                          replicas, 10)


def test_a_move_adds_the_new_replicas_after_the_original_ones_and_keeps_the_leader():
    moving = started(state([0, 1, 2]), (2, 3, 4), set(BROKERS))
    assert moving.replicas == (0, 1, 2, 3, 4)
    assert (moving.leader, moving.leader_epoch, moving.isr) == (0, 3, (0, 1, 2))
    assert adding_replicas(moving) == (3, 4) and removing_replicas(moving) == (0, 1)
    assert completed(moving, set(BROKERS)) is None  # 3 and 4 are not in sync yet


def test_completion_moves_leadership_to_the_first_live_target_replica_with_a_new_epoch():
    moving = started(state([0, 1, 2]), (3, 4, 2), set(BROKERS))
    caught_up = moving.__class__(**{**moving.__dict__, "isr": (0, 1, 2, 3, 4)})
    assert completed(caught_up, {0, 1, 2, 4}) == PartitionState(
        "t", 0, 4, 4, (3, 4, 2), (3, 4, 2), 10)  # 3 is not live: 4 leads


def test_refusals_carry_their_error_codes():
    current = state([0, 1, 2])
    for target, code, words in [((), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "at least one"),
                                ((1, 1), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "repeated"),
                                ((1, 9), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "[9]")]:
        with pytest.raises(ReassignmentError, match=words.replace("[", r"\[")) as caught:
            started(current, target, set(BROKERS))
        assert caught.value.error_code == code
    with pytest.raises(ReassignmentError) as caught:
        cancelled(current)
    assert caught.value.error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    moving = started(current, (3,), set(BROKERS))
    with pytest.raises(ReassignmentError) as caught:
        started(moving, (4,), set(BROKERS))
    assert caught.value.error_code == ErrorCode.REASSIGNMENT_IN_PROGRESS
    assert started(current, (0, 1, 2), set(BROKERS)) is None  # already there


@given(replica_sets, replica_sets, st.data())
def test_start_then_complete_or_cancel_obeys_the_rules(original, target, data):
    current = state(original)
    moving = started(current, tuple(target), set(BROKERS))
    if tuple(target) == tuple(original):
        assert moving is None
        return
    # Start: the union, originals first; leader, epoch and ISR untouched.
    assert moving.replicas == tuple(original) + tuple(b for b in target if b not in original)
    assert original_replicas(moving) == tuple(original)
    assert (moving.leader, moving.leader_epoch, moving.isr) == (
        current.leader, current.leader_epoch, current.isr)
    assert decode_state("t", 0, encode_state(moving), 10) == moving
    if data.draw(st.booleans()):
        moving = cancelled(moving)
        target = list(original)
        assert adding_replicas(moving) == ()
    isr = tuple(data.draw(st.lists(st.sampled_from(list(moving.replicas)), unique=True,
                                   min_size=1)))
    leader = data.draw(st.sampled_from(isr))
    live = set(data.draw(st.lists(st.sampled_from(BROKERS), unique=True)))
    in_sync = PartitionState("t", 0, leader, 3, isr, moving.replicas, 11, moving.target,
                             moving.adding)
    done = completed(in_sync, live)
    # Completion: only once every target replica is in the ISR, and never to a leader
    # outside the ISR or not live; a leader that stays keeps its epoch.
    live_target = [b for b in target if b in live]
    if not set(target) <= set(isr) or (leader not in target and not live_target):
        assert done is None
        return
    assert done.replicas == done.isr == tuple(target)
    assert (done.target, done.adding) == ((), ())
    if leader in target:
        assert (done.leader, done.leader_epoch) == (leader, 3)
    else:
        assert (done.leader, done.leader_epoch) == (live_target[0], 4)
        assert done.leader in isr


def test_a_state_without_a_reassignment_keeps_its_old_json():
    plain = state([0, 1])
    assert encode_state(plain) == (b'{"isr":[0,1],"leader":0,"leader_epoch":3,'
                                   b'"replicas":[0,1]}')


@given(replica_sets, st.data())
def test_the_preferred_replica_leads_again_only_when_live_and_in_sync(replicas, data):
    isr = tuple(data.draw(st.lists(st.sampled_from(replicas), unique=True, min_size=1)))
    leader = data.draw(st.sampled_from(isr))
    live = set(data.draw(st.lists(st.sampled_from(BROKERS), unique=True)))
    current = state(replicas, isr, leader)
    new = preferred(current, live)
    first = replicas[0]
    if leader == first or first not in isr or first not in live:
        assert new is None
    else:
        assert (new.leader, new.leader_epoch, new.isr) == (first, 4, isr)


def test_no_preferred_election_while_a_reassignment_runs_or_without_a_leader():
    moving = started(state([0, 1], leader=1), (1, 2), set(BROKERS))
    assert preferred(moving, set(BROKERS)) is None
    assert preferred(state([0, 1], leader=-1), set(BROKERS)) is None
