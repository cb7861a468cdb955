"""Groups that only committed offsets are groups, and deleting a group deletes its offsets
(as in Kafka), on real brokers spoken raw (tests/helpers/wire.py): ListGroups lists such a
group Empty, ConsumerGroupDescribe describes it Empty, DeleteGroups deletes it with every
offset it committed, durably on a single broker and from etcd (seen by every broker) in a
cluster; a group with a live member is refused and keeps its offsets."""

from __future__ import annotations

import pytest

from tests.helpers.wire import Wire
from tests.integration.test_cluster_brokers import FAILOVER_BOUND_S, create, wait_for
from tests.integration.test_consumer_groups_cluster import (
    ask, controller_of, find_coordinator, three, wait_for_topic,  # noqa: F401 (fixture)
)
from tests.integration.test_consumer_groups_wire import Member, settle
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(180)

EMPTY = {"error_code": 0, "state": "EMPTY", "group_epoch": 0, "assignment_epoch": 0,
         "assignor": "uniform", "members": []}


def commit(wire: Wire, group: str, offsets: dict[int, int], member_id: str = "",
           epoch: int = -1) -> list[int]:
    """OffsetCommit v1 of partitions of 'events'; "" / -1: a client outside group management."""
    body = wire.request(ApiKey.OFFSET_COMMIT, {
        "group_id": group, "member_id": member_id, "member_epoch": epoch,
        "topics": [{"topic": "events", "partitions": [
            {"partition": p, "offset": o, "metadata": ""} for p, o in sorted(offsets.items())]}]},
        version=1)
    return [p["error_code"] for t in body["topics"] for p in t["partitions"]]


def fetched(wire: Wire, group: str) -> dict[int, int]:
    body = wire.request(ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None})
    return {p["partition"]: p["offset"] for t in body["topics"] for p in t["partitions"]}


def listed(wire: Wire, states=None) -> list[tuple[str, str, int]]:
    body = wire.request(ApiKey.LIST_GROUPS, {"states": states})
    assert body["error_code"] == 0, body
    return [(g["group_id"], g["state"], g["members"]) for g in body["groups"]]


def described(wire: Wire, group: str) -> dict:
    (answer,) = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": [group]})["groups"]
    return answer


def delete(wire: Wire, *groups: str) -> list[int]:
    body = wire.request(ApiKey.DELETE_GROUPS, {"groups": list(groups)})
    assert [r["group_id"] for r in body["results"]] == list(groups)
    return [r["error_code"] for r in body["results"]]


def test_a_group_with_only_commits_is_listed_described_and_deleted_with_them(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        assert commit(wire, "batch", {0: 3, 1: 5}) == [0, 0]
        assert listed(wire) == [("batch", "EMPTY", 0)]
        assert listed(wire, ["Empty"]) == [("batch", "EMPTY", 0)]
        assert listed(wire, ["Stable"]) == []
        assert described(wire, "batch") == {"group_id": "batch", **EMPTY}
        assert described(wire, "nobody")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND

        assert delete(wire, "batch", "nobody") == [0, ErrorCode.GROUP_ID_NOT_FOUND]
        assert fetched(wire, "batch") == {}
        assert listed(wire) == []
        assert described(wire, "batch")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        assert delete(wire, "batch") == [ErrorCode.GROUP_ID_NOT_FOUND]
    broker.restart()
    with Wire(broker.host, broker.port) as wire:
        assert fetched(wire, "batch") == {}  # the delete was durable
        assert listed(wire) == []
        assert delete(wire, "batch") == [ErrorCode.GROUP_ID_NOT_FOUND]
        # The name can be used again, and starts from nothing.
        assert commit(wire, "batch", {1: 7}) == [0]
        assert fetched(wire, "batch") == {1: 7}


def test_a_group_with_a_live_member_keeps_its_offsets_until_it_is_empty(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        member = Member(wire, ["events"])
        settle(member)
        assert commit(wire, "readers", {0: 4, 1: 2}, member.member_id, member.epoch) == [0, 0]
        assert delete(wire, "readers") == [ErrorCode.NON_EMPTY_GROUP]
        assert fetched(wire, "readers") == {0: 4, 1: 2}
        assert listed(wire) == [("readers", "STABLE", 1)]

        assert member.wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": "readers", "member_id": member.member_id, "member_epoch": -1,
            "subscribed_topics": None, "owned": None})["error_code"] == 0  # leaves
        assert listed(wire) == [("readers", "EMPTY", 0)]
        assert delete(wire, "readers") == [0]
        assert fetched(wire, "readers") == {}
        assert listed(wire) == []
    broker.restart()
    with Wire(broker.host, broker.port) as wire:
        assert fetched(wire, "readers") == {}
        assert listed(wire) == []
        assert described(wire, "readers")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.slow
def test_in_a_cluster_a_deleted_groups_offsets_leave_every_broker(three):
    controller = controller_of(three)
    assert create(controller, "events", 2, 3)["error_code"] == 0
    wait_for_topic(three, "events")
    with Wire(controller.host, controller.port) as wire:
        assert commit(wire, "batch", {0: 3, 1: 5}) == [0, 0]
        assert commit(wire, "keep", {0: 1}) == [0]
    for broker in three:
        wait_for(lambda: fetched_from(broker, "batch") == {0: 3, 1: 5}, 10,
                 f"broker {broker.node_id} sees the commits")
    with Wire(controller.host, controller.port) as wire:
        assert listed(wire) == [("batch", "EMPTY", 0), ("keep", "EMPTY", 0)]
        assert described(wire, "batch") == {"group_id": "batch", **EMPTY}
        assert delete(wire, "batch") == [0]
        assert fetched(wire, "batch") == {}  # the controller's own cache at once
        assert listed(wire) == [("keep", "EMPTY", 0)]
        assert delete(wire, "batch") == [ErrorCode.GROUP_ID_NOT_FOUND]
    for broker in three:
        wait_for(lambda: fetched_from(broker, "batch") == {}, 10,
                 f"broker {broker.node_id} no longer has the deleted group's offsets")
        assert fetched_from(broker, "keep") == {0: 1}

    # The next controller restores from etcd: the deleted group does not come back.
    controller.kill()
    survivors = [b for b in three if b is not controller]
    wait_for(lambda: find_coordinator(survivors[0])["node_id"] in
             {b.node_id for b in survivors}, FAILOVER_BOUND_S, "a new coordinator")
    successor = next(b for b in survivors
                     if b.node_id == find_coordinator(survivors[0])["node_id"])
    wait_for(lambda: ask(successor, ApiKey.LIST_GROUPS, {"states": None})["error_code"] == 0,
             10, "the new coordinator has loaded")
    groups = ask(successor, ApiKey.LIST_GROUPS, {"states": None})["groups"]
    assert [g["group_id"] for g in groups] == ["keep"]
    assert fetched_from(successor, "batch") == {}


def fetched_from(broker, group: str) -> dict[int, int]:
    with Wire(broker.host, broker.port) as wire:
        return fetched(wire, group)
