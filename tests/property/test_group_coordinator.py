"""Random histories of consumer groups checked against the coordinator's promises.

Hypothesis drives joins, leaves, heartbeats that do or do not confirm revocations, heartbeat
responses lost on the way back, clock jumps followed by ``expire`` (missed heartbeats),
subscription changes, topics created, grown and deleted, commits from live members, stale
epochs and removed members, and a save to JSON and restore into a fresh coordinator.

After every step:
- no partition is owned by two members of one group: neither in the coordinator's books
  (``assigned`` plus ``revoking``) nor among what the consumers themselves are reading, and
  every consumer reads only what the coordinator counts as its own;
- group epochs never go down, and no member is ahead of its group.

On the ``settle`` step (every member heartbeats, promptly giving up what it is told to, a few
rounds without the clock moving) each group with members must be STABLE, every partition of
every subscribed topic owned by exactly one member subscribed to it, and the counts balanced:
no partition could move to a member holding two fewer that also subscribes to its topic.

Commits: accepted only from a member the coordinator still has, at its current epoch; never
from a member that left or was expired, nor with an older epoch.
"""

from __future__ import annotations

import json

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.helpers.groups import SimMember, counter_ids
from tslog.broker.groups import CoordinatorConfig, GroupCoordinator, GroupState
from tslog.protocol.errors import ErrorCode

# a rebalance timeout below the session timeout, so members that sit on partitions they
# were told to give up get removed for it within a few steps
CONFIG = CoordinatorConfig(session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
                           rebalance_timeout_ms=5_000)
GROUPS = ["g1", "g2"]
TOPICS = ["a", "b", "c"]
MEMBERS_MAX = 7
topic_sets = st.lists(st.sampled_from(TOPICS), unique=True, max_size=3)


class GroupCoordinatorModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.topics = {"a": 3, "b": 2}
        self.new_member_id = counter_ids()  # one sequence across restores: ids never repeat
        self.coordinator = GroupCoordinator(CONFIG, self.topics, self.new_member_id)
        self.now_ms = 0
        self.live: list[SimMember] = []
        self.last_heartbeat_ms: dict[int, int] = {}  # id(member) -> the model's view
        self.gone: list[tuple[str, str, int]] = []  # (group, member id, last epoch)
        self.epochs = {group: 0 for group in GROUPS}

    # -- members ----------------------------------------------------------------------------

    @initialize(groups=st.lists(st.sampled_from(GROUPS), max_size=4), topics=topic_sets)
    def start_with_members(self, groups, topics):
        for group in groups:
            self.join(group, topics)

    @precondition(lambda self: len(self.live) < MEMBERS_MAX)
    @rule(group=st.sampled_from(GROUPS), topics=topic_sets)
    def join(self, group, topics):
        member = SimMember(group, topics)
        assert member.join(self.coordinator, self.now_ms).error is ErrorCode.NONE
        self.live.append(member)
        self.last_heartbeat_ms[id(member)] = self.now_ms

    def _heartbeat(self, member, revoke=True, topics=None):
        response = member.heartbeat(self.coordinator, self.now_ms, revoke=revoke, topics=topics)
        if response.error is ErrorCode.FENCED_MEMBER_EPOCH:
            # only after lost responses; the consumer dropped everything and rejoins
            event("fenced, rejoined")
            assert member.join(self.coordinator, self.now_ms).error is ErrorCode.NONE
        else:
            assert response.error is ErrorCode.NONE, response
        self.last_heartbeat_ms[id(member)] = self.now_ms

    @precondition(lambda self: self.live)
    @rule(data=st.data(), revoke=st.booleans())
    def heartbeat(self, data, revoke):
        self._heartbeat(data.draw(st.sampled_from(self.live)), revoke=revoke)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def heartbeat_response_lost(self, data):
        member = data.draw(st.sampled_from(self.live))
        response = self.coordinator.heartbeat(member.group_id, member.member_id, member.epoch,
                                              None, sorted(member.owned), self.now_ms)
        assert response.error in (ErrorCode.NONE, ErrorCode.FENCED_MEMBER_EPOCH)
        if response.error is ErrorCode.NONE:
            self.last_heartbeat_ms[id(member)] = self.now_ms

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def heartbeat_with_a_wrong_epoch(self, data):
        member = data.draw(st.sampled_from(self.live))
        # Above both the epoch this consumer knows and the coordinator's: after a lost
        # response, the consumer's epoch + 1 may be the coordinator's current one.
        current = next(m.member_epoch for m in self.coordinator.describe(member.group_id).members
                       if m.member_id == member.member_id)
        response = self.coordinator.heartbeat(member.group_id, member.member_id,
                                              max(member.epoch, current) + 1,
                                              None, sorted(member.owned), self.now_ms)
        assert response.error is ErrorCode.FENCED_MEMBER_EPOCH
        assert response.assignment is None
        event("fenced, rejoined")
        member.owned = member.given = frozenset()  # what a fenced consumer does
        assert member.join(self.coordinator, self.now_ms).error is ErrorCode.NONE
        self.last_heartbeat_ms[id(member)] = self.now_ms

    @precondition(lambda self: self.live)
    @rule(data=st.data(), topics=topic_sets)
    def change_subscription(self, data, topics):
        self._heartbeat(data.draw(st.sampled_from(self.live)), topics=topics)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def leave(self, data):
        member = data.draw(st.sampled_from(self.live))
        epoch = member.epoch
        assert member.leave(self.coordinator, self.now_ms).error is ErrorCode.NONE
        self.live.remove(member)
        self.gone.append((member.group_id, member.member_id, epoch))

    @rule(elapsed_ms=st.sampled_from([0, 1_000, 3_000, 5_001, 10_000, 10_001]))
    def advance_clock_and_expire(self, elapsed_ms):
        self.now_ms += elapsed_ms
        expired = {(e.group_id, e.member_id): e.reason
                   for e in self.coordinator.expire(self.now_ms)}
        for member in list(self.live):
            reason = expired.get((member.group_id, member.member_id))
            if reason is None:
                continue
            event(f"expired ({reason})")
            if reason == "session":
                assert self.now_ms - self.last_heartbeat_ms[id(member)] > CONFIG.session_timeout_ms
            self.live.remove(member)
            self.gone.append((member.group_id, member.member_id, member.epoch))

    # -- topics -----------------------------------------------------------------------------

    @rule(topic=st.sampled_from(TOPICS), more=st.integers(1, 3))
    def create_or_grow_topic(self, topic, more):
        self.topics[topic] = self.topics.get(topic, 0) + more
        self.coordinator.update_topic(topic, self.topics[topic])

    @rule(topic=st.sampled_from(TOPICS))
    def delete_topic(self, topic):
        self.topics.pop(topic, None)
        self.coordinator.update_topic(topic, 0)

    # -- commits ----------------------------------------------------------------------------

    @precondition(lambda self: self.live)
    @rule(data=st.data(), stale=st.booleans())
    def commit_from_a_member(self, data, stale):
        member = data.draw(st.sampled_from(self.live))
        epoch = member.epoch - 1 if stale else member.epoch
        result = self.coordinator.validate_commit(member.group_id, member.member_id, epoch)
        current = self._described(member).member_epoch
        assert (result is ErrorCode.NONE) == (epoch == current), (result, epoch, current)
        event(f"commit from a member: {result.name}")
        if result is not ErrorCode.NONE:
            assert result is ErrorCode.STALE_MEMBER_EPOCH

    @precondition(lambda self: self.gone)
    @rule(data=st.data())
    def commit_from_a_removed_member(self, data):
        group, member_id, epoch = data.draw(st.sampled_from(self.gone))
        if any(m.member_id == member_id for m in self.live):
            return  # it rejoined under the same id (after being fenced): a new incarnation
        result = self.coordinator.validate_commit(group, member_id, epoch)
        assert result is ErrorCode.UNKNOWN_MEMBER_ID, result

    # -- failover and settling ------------------------------------------------------------

    @rule()
    def save_and_restore(self):
        record = json.loads(json.dumps(self.coordinator.to_record()))
        before = {group: self.coordinator.describe(group) for group in GROUPS}
        self.coordinator = GroupCoordinator.from_record(record, self.now_ms, CONFIG,
                                                        self.new_member_id)
        assert {group: self.coordinator.describe(group) for group in GROUPS} == before
        for member in self.live:  # sessions restart on the new coordinator
            self.last_heartbeat_ms[id(member)] = self.now_ms

    @rule()
    def settle(self):
        for _ in range(6):
            for member in list(self.live):
                self._heartbeat(member)
        for group in GROUPS:
            self._check_settled(group)

    def _check_settled(self, group):
        members = [m for m in self.live if m.group_id == group]
        description = self.coordinator.describe(group)
        if not members:
            assert description.state in (GroupState.EMPTY, GroupState.DEAD)
            return
        assert description.state is GroupState.STABLE, description
        event(f"settled a group of {len(members) if len(members) < 3 else '3+'} members")
        owners = {}
        for member in members:
            for topic, partition in member.owned:
                assert topic in member.topics
                assert (topic, partition) not in owners
                owners[(topic, partition)] = member
        wanted = {(t, p) for m in members for t in m.topics for p in range(self.topics.get(t, 0))}
        assert set(owners) == wanted
        for giver in members:
            for receiver in members:
                if len(giver.owned) > len(receiver.owned) + 1:
                    assert not [tp for tp in giver.owned if tp[0] in receiver.topics]

    # -- invariants -------------------------------------------------------------------------

    def _described(self, member):
        description = self.coordinator.describe(member.group_id)
        return next(m for m in description.members if m.member_id == member.member_id)

    @invariant()
    def no_partition_has_two_owners(self):
        for group in GROUPS:
            description = self.coordinator.describe(group)
            seen = set()
            for member in description.members:
                owned = member.assigned | member.revoking
                assert not member.assigned & member.revoking
                assert not owned & seen, (group, owned & seen)
                seen |= owned
            reading = set()
            for member in (m for m in self.live if m.group_id == group):
                assert not member.owned & reading
                reading |= member.owned
                books = self._described(member)
                assert member.owned <= books.assigned | books.revoking

    @invariant()
    def epochs_only_rise(self):
        for group in GROUPS:
            description = self.coordinator.describe(group)
            if description.group_epoch >= 0:
                assert description.group_epoch >= self.epochs[group]
                self.epochs[group] = description.group_epoch
            for member in description.members:
                assert (member.member_epoch <= description.assignment_epoch
                        <= description.group_epoch)


GroupCoordinatorModel.TestCase.settings = settings(GroupCoordinatorModel.TestCase.settings,
                                                   stateful_step_count=50)
TestGroupCoordinator = GroupCoordinatorModel.TestCase
