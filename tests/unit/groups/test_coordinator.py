"""Scenarios of the group coordinator, written as scripts: join, settle, change something,
heartbeat, and check who owns what, which epochs, which state, and which commits pass.

The coordinator is pure, so every test drives it directly with a hand-advanced clock; the
consumers are ``SimMember`` (tests/helpers/groups.py), which follow the protocol.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from tests.helpers.groups import SimMember, counter_ids, settle
from tslog.broker.groups import (
    CoordinatorConfig,
    GroupCoordinator,
    GroupState,
    MemberState,
)
from tslog.protocol.errors import ErrorCode

STALE = ErrorCode.STALE_MEMBER_EPOCH
UNKNOWN = ErrorCode.UNKNOWN_MEMBER_ID

CONFIG = CoordinatorConfig(session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
                           rebalance_timeout_ms=20_000)


def make(topics=None, **settings) -> GroupCoordinator:
    config = dataclasses.replace(CONFIG, **settings)
    return GroupCoordinator(config, topics or {"t": 6}, counter_ids())


def joined(coordinator, count, topics=("t",), now_ms=0, group="g"):
    members = [SimMember(group, topics) for _ in range(count)]
    for member in members:
        assert member.join(coordinator, now_ms).error is ErrorCode.NONE
    settle(coordinator, members, now_ms)
    return members


def owners(members):
    return {member.member_id: member.owned for member in members}


def test_three_members_on_six_partitions_get_two_each_and_the_group_is_stable():
    coordinator = make()
    members = joined(coordinator, 3)
    assert sorted(len(m.owned) for m in members) == [2, 2, 2]
    assert frozenset().union(*(m.owned for m in members)) == {("t", p) for p in range(6)}
    description = coordinator.describe("g")
    assert description.state is GroupState.STABLE
    assert {m.member_epoch for m in description.members} == {description.assignment_epoch}
    assert all(m.state is MemberState.STABLE for m in description.members)


def test_a_member_leaving_moves_only_its_partitions():
    coordinator = make()
    a, b, c = joined(coordinator, 3)
    before = owners([a, c])
    assert b.leave(coordinator, 5).error is ErrorCode.NONE
    for _ in range(3):  # the others never lose a partition on the way
        for member in (a, c):
            member.heartbeat(coordinator, 5)
            assert before[member.member_id] <= member.owned
    assert len(a.owned) == len(c.owned) == 3
    assert coordinator.describe("g").state is GroupState.STABLE


def test_a_fourth_member_takes_one_partition_and_nothing_else_moves():
    coordinator = make()
    members = joined(coordinator, 3)
    before = owners(members)
    d = SimMember("g", ["t"])
    d.join(coordinator, 0)
    settle(coordinator, [*members, d], 0)
    assert sorted(len(m.owned) for m in members) == [1, 2, 2] and len(d.owned) == 1
    assert sum(len(before[m.member_id] - m.owned) for m in members) == 1


def test_a_joining_member_waits_for_the_owner_to_give_its_partition_up():
    coordinator = make()
    a, b = joined(coordinator, 2)
    c = SimMember("g", ["t"])
    assert c.join(coordinator, 0).assignment == frozenset()  # everything is still owned
    a.heartbeat(coordinator, 0, revoke=False)  # a learns to give one up, keeps reading it
    b.heartbeat(coordinator, 0, revoke=False)
    taken = frozenset().union(*(m.revoking for m in coordinator.describe("g").members))
    assert len(taken) == 2 and taken <= a.owned | b.owned
    c.heartbeat(coordinator, 0)
    assert c.owned == frozenset()
    assert coordinator.describe("g").state is GroupState.RECONCILING
    a.heartbeat(coordinator, 0)  # a confirms; b has not yet
    c.heartbeat(coordinator, 0)
    assert len(c.owned) == 1 and not c.owned & b.owned
    b.heartbeat(coordinator, 0)
    c.heartbeat(coordinator, 0)
    assert sorted(len(m.owned) for m in (a, b, c)) == [2, 2, 2]
    assert coordinator.describe("g").state is GroupState.STABLE


def test_a_silent_member_expires_and_its_partitions_move():
    coordinator = make()
    a, b = joined(coordinator, 2)
    assert coordinator.expire(10_000) == []  # exactly the session timeout is still alive
    a.heartbeat(coordinator, 9_000)
    expired = coordinator.expire(10_001)
    assert [(e.member_id, e.reason) for e in expired] == [(b.member_id, "session")]
    settle(coordinator, [a], 10_001)
    assert a.owned == {("t", p) for p in range(6)}
    assert coordinator.validate_commit("g", b.member_id, b.epoch) is UNKNOWN


def test_a_member_that_never_gives_up_is_removed_after_the_rebalance_timeout():
    coordinator = make()
    (a,) = joined(coordinator, 1)
    b = SimMember("g", ["t"])
    b.join(coordinator, 0)
    for now_ms in range(0, 20_001, 5_000):  # a is told at 0 to give 3 partitions up
        a.heartbeat(coordinator, now_ms, revoke=False)
        b.heartbeat(coordinator, now_ms)
        assert coordinator.expire(now_ms) == []
    assert len(b.owned) == 0
    assert [(e.member_id, e.reason) for e in coordinator.expire(20_001)] == [
        (a.member_id, "revocation")]


def test_commits_are_fenced_by_member_and_epoch():
    coordinator = make()
    a, b = joined(coordinator, 2)
    assert coordinator.validate_commit("g", a.member_id, a.epoch) is ErrorCode.NONE
    assert coordinator.validate_commit("g", a.member_id, a.epoch - 1) is STALE
    assert coordinator.validate_commit("g", a.member_id, a.epoch + 1) is STALE
    assert coordinator.validate_commit("g", "nobody", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert coordinator.validate_commit("g", "", -1) is UNKNOWN  # the group has members
    assert coordinator.validate_commit("other", "", -1) is ErrorCode.NONE  # manual offsets
    a.leave(coordinator, 0)
    b.leave(coordinator, 0)
    assert coordinator.validate_commit("g", a.member_id, a.epoch) is UNKNOWN
    assert coordinator.validate_commit("g", "", -1) is ErrorCode.NONE  # empty group again


def test_heartbeat_errors_and_fencing():
    coordinator = make()
    (a,) = joined(coordinator, 1)
    hb = coordinator.heartbeat
    assert hb("", a.member_id, a.epoch, None, None, 0).error is ErrorCode.INVALID_GROUP_ID
    assert hb("nope", a.member_id, 1, None, None, 0).error is ErrorCode.GROUP_ID_NOT_FOUND
    assert hb("g", "nobody", 1, None, None, 0).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert hb("g", "", 0, None, None, 0).error is ErrorCode.INVALID_REQUEST  # join needs topics
    assert hb("g", a.member_id, -2, None, None, 0).error is ErrorCode.INVALID_REQUEST  # static
    fenced = hb("g", a.member_id, a.epoch + 1, None, None, 0)
    assert fenced.error is ErrorCode.FENCED_MEMBER_EPOCH and fenced.assignment is None
    # a member whose epoch-moving response was lost may retry with its previous epoch
    b = SimMember("g", ["t"])
    b.join(coordinator, 0)
    old_epoch = a.epoch
    settle(coordinator, [a, b], 0)
    assert a.epoch > old_epoch
    assert hb("g", a.member_id, old_epoch, None, sorted(a.owned), 0).error is ErrorCode.NONE
    fenced = ErrorCode.FENCED_MEMBER_EPOCH
    assert hb("g", a.member_id, old_epoch, None, None, 0).error is fenced
    # a fenced member rejoins under its own id with epoch 0 and starts afresh
    rejoined = hb("g", a.member_id, 0, ["t"], None, 0)
    assert rejoined.error is ErrorCode.NONE and rejoined.member_epoch > a.epoch


def test_group_size_is_limited():
    coordinator = make(group_size_max=2)
    joined(coordinator, 2)
    assert SimMember("g", ["t"]).join(coordinator, 0).error is ErrorCode.GROUP_MAX_SIZE_REACHED


def test_topic_growth_and_deletion_reassign():
    coordinator = make({"t": 2, "u": 2})
    a, b = joined(coordinator, 2, topics=("t", "u"))
    epoch = coordinator.describe("g").group_epoch
    coordinator.update_topic("t", 4)
    assert coordinator.describe("g").state is GroupState.ASSIGNING
    assert coordinator.describe("g").group_epoch == epoch + 1
    settle(coordinator, [a, b], 0)
    assert len(a.owned) == len(b.owned) == 3
    coordinator.update_topic("u", 0)
    settle(coordinator, [a, b], 0)
    assert a.owned | b.owned == {("t", p) for p in range(4)}
    coordinator.update_topic("elsewhere", 3)  # nobody subscribes: no new epoch
    assert coordinator.describe("g").state is GroupState.STABLE


def test_subscription_change_moves_partitions():
    coordinator = make({"t": 2, "u": 2})
    a, b = joined(coordinator, 2, topics=("t",))
    b.heartbeat(coordinator, 0, topics=["u"])
    settle(coordinator, [a, b], 0)
    assert a.owned == {("t", 0), ("t", 1)} and b.owned == {("u", 0), ("u", 1)}


def test_record_round_trip_through_json_keeps_everything_but_the_clock():
    coordinator = make()
    a, b, c = joined(coordinator, 3)
    c.leave(coordinator, 0)
    a.heartbeat(coordinator, 0, revoke=False)  # mid-reconciliation
    record = json.loads(json.dumps(coordinator.to_record()))
    restored = GroupCoordinator.from_record(record, 50_000, CONFIG, counter_ids("n"))
    assert restored.to_record() == coordinator.to_record()
    assert restored.describe("g") == coordinator.describe("g")
    assert restored.expire(50_000 + CONFIG.session_timeout_ms) == []  # sessions restarted
    settle(restored, [a, b], 50_000)
    assert restored.describe("g").state is GroupState.STABLE
    with pytest.raises(ValueError):
        GroupCoordinator.from_record({**record, "format": 99}, 0)


def test_one_group_saved_and_restored_on_its_own():
    coordinator = make()
    joined(coordinator, 2, group="g1")
    joined(coordinator, 1, group="g2")
    assert coordinator.group_record("missing") is None
    record = json.loads(json.dumps(coordinator.group_record("g1")))
    other = make()
    other.restore_group(record, 0)
    assert other.describe("g1") == coordinator.describe("g1")
    assert [g.group_id for g in other.list_groups()] == ["g1"]
    with pytest.raises(ValueError):
        other.restore_group({**record, "format": 0}, 0)


def test_list_describe_and_delete():
    coordinator = make()
    (a,) = joined(coordinator, 1, group="g1")
    joined(coordinator, 1, group="g2")
    assert [(g.group_id, g.state, g.member_count) for g in coordinator.list_groups()] == [
        ("g1", GroupState.STABLE, 1), ("g2", GroupState.STABLE, 1)]
    assert coordinator.delete_group("g1") is ErrorCode.NON_EMPTY_GROUP
    a.leave(coordinator, 0)
    assert coordinator.describe("g1").state is GroupState.EMPTY
    assert coordinator.delete_group("g1") is ErrorCode.NONE
    assert coordinator.delete_group("g1") is ErrorCode.GROUP_ID_NOT_FOUND
    dead = coordinator.describe("g1")
    assert dead.state is GroupState.DEAD and dead.error is ErrorCode.GROUP_ID_NOT_FOUND


def test_range_assignor_can_be_chosen():
    coordinator = make({"t": 3}, assignor="range")
    members = joined(coordinator, 2)
    layout = sorted((m.member_id, sorted(m.owned)) for m in members)
    assert layout == [("m0", [("t", 0), ("t", 1)]), ("m1", [("t", 2)])]


def test_config_is_checked():
    with pytest.raises(ValueError, match="assignor.*heartbeat|heartbeat.*assignor"):
        CoordinatorConfig(heartbeat_interval_ms=50_000, assignor="fancy")


# The modules of broker/groups that run the state machines (on the loop, with a clock and
# stores: issue 41 put them beside the machines); every other module there is pure.
RUNNERS = {"service.py", "classic_service.py", "committed_offsets.py", "offset_files.py",
           "state_files.py", "offset_etcd.py", "state_etcd.py",
           # the group service both ports' adapters call
           "api.py", "offsets_api.py", "offset_delete.py", "membership_api.py"}


def test_groups_state_machines_import_only_protocol_errors_and_the_stdlib():
    """The coordinators, their views and the group catalog are pure: no storage, server,
    asyncio or third-party imports (the services and stores beside them are not)."""
    import sys

    folder = Path(__file__).resolve().parents[3] / "broker" / "groups"
    assert RUNNERS <= {path.name for path in folder.glob("*.py")}
    pure = [path for path in folder.glob("*.py") if path.name not in RUNNERS]
    assert {"coordinator.py", "classic.py", "catalog.py", "consumer_protocol.py"} <= {
        path.name for path in pure}
    for path in pure:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 or node.module == "protocol.errors", (path, node.module)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module])
                for name in names:
                    top = name.split(".")[0]
                    assert top in sys.stdlib_module_names or top == "__future__", (path, name)
                    assert top not in {"asyncio", "socket", "time", "threading"}, (path, name)


def test_a_members_client_id_and_host_come_from_its_join_and_survive_a_restore():
    coordinator = make()
    answer = coordinator.heartbeat("g", "", 0, ["t"], None, 0, client=("billing", "10.0.0.7"))
    coordinator.heartbeat("g", answer.member_id, answer.member_epoch, None, [], 10)
    (member,) = coordinator.describe("g").members
    assert (member.client_id, member.client_host) == ("billing", "10.0.0.7")
    record = json.loads(json.dumps(coordinator.to_record()))
    restored = GroupCoordinator.from_record(record, 0, CONFIG, counter_ids("n"))
    assert restored.describe("g") == coordinator.describe("g")


def test_a_record_from_before_client_ids_were_kept_is_read_with_empty_ones():
    coordinator = make()
    joined(coordinator, 1)
    record = json.loads(json.dumps(coordinator.to_record()))
    for member in record["groups"][0]["members"]:
        del member["client_id"], member["client_host"]
    restored = GroupCoordinator.from_record(record, 0, CONFIG, counter_ids("n"))
    (member,) = restored.describe("g").members
    assert (member.client_id, member.client_host) == ("", "")
