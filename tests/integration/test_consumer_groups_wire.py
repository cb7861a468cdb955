"""The consumer-group APIs on a real broker, spoken raw (tests/helpers/wire.py): members join,
share partitions without ever both owning one, leave, and the state survives a restart."""

from __future__ import annotations

import pytest

from tests.helpers.wire import Wire
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(120)


def beat(wire: Wire, member_id: str, epoch: int, topics=None, owned=None,
         group: str = "readers") -> dict:
    return wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": group, "member_id": member_id, "member_epoch": epoch,
        "subscribed_topics": topics, "owned": owned})


def pairs(assignment) -> set[tuple[str, int]]:
    return {(g["topic"], p) for g in assignment or [] for p in g["partitions"]}


class Member:
    """A member that gives up what it is told to and acknowledges what it holds."""

    def __init__(self, wire: Wire, topics: list[str]) -> None:
        self.wire = wire
        answer = beat(wire, "", 0, topics, [])
        assert answer["error_code"] == 0, answer
        self.member_id = answer["member_id"]
        self.epoch = answer["member_epoch"]
        self.owned = pairs(answer["assignment"])

    def heartbeat(self) -> dict:
        owned = [{"topic": t, "partitions": [p]} for t, p in sorted(self.owned)]
        answer = beat(self.wire, self.member_id, self.epoch, None, owned)
        assert answer["error_code"] == 0, answer
        self.epoch = answer["member_epoch"]
        self.owned = pairs(answer["assignment"])
        return answer


def settle(*members: Member, rounds: int = 10) -> None:
    for _ in range(rounds):
        for member in members:
            member.heartbeat()


def test_two_members_split_the_partitions_and_never_share_one(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 4) == 0
        coordinator = wire.request(ApiKey.FIND_COORDINATOR, {"key_type": "group",
                                                             "keys": ["readers"]})
        assert coordinator["coordinators"][0]["port"] == broker.port
        first = Member(wire, ["events"])
        settle(first)
        assert first.owned == {("events", p) for p in range(4)}
        second = Member(wire, ["events"])
        for _ in range(10):
            first.heartbeat()
            second.heartbeat()
            assert not first.owned & second.owned
        assert len(first.owned) == len(second.owned) == 2
        assert first.owned | second.owned == {("events", p) for p in range(4)}
        described = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["readers"]})
        group = described["groups"][0]
        assert group["error_code"] == 0 and group["state"] == "STABLE"
        assert {m["member_id"] for m in group["members"]} == {first.member_id,
                                                               second.member_id}
        listed = wire.request(ApiKey.LIST_GROUPS, {"states": None})
        assert listed["groups"] == [{"group_id": "readers", "state": "STABLE", "members": 2}]


def test_the_group_survives_a_restart_and_members_carry_on(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        first, second = Member(wire, ["events"]), Member(wire, ["events"])
        settle(first, second)
        held = (first.owned, second.owned, first.epoch, second.epoch)
    broker.restart()
    with Wire(broker.host, broker.port) as wire:
        first.wire = second.wire = wire
        settle(first, second)
        assert (first.owned, second.owned, first.epoch, second.epoch) == held


def test_a_leaving_member_frees_its_partitions_and_an_empty_group_can_be_deleted(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        first, second = Member(wire, ["events"]), Member(wire, ["events"])
        settle(first, second)
        assert beat(wire, second.member_id, -1)["member_epoch"] == -1
        settle(first)
        assert first.owned == {("events", 0), ("events", 1)}
        refused = wire.request(ApiKey.DELETE_GROUPS, {"groups": ["readers", "nobody"]})
        assert [r["error_code"] for r in refused["results"]] == [68, 69]  # NON_EMPTY, NOT_FOUND
        assert beat(wire, first.member_id, -1)["error_code"] == 0
        deleted = wire.request(ApiKey.DELETE_GROUPS, {"groups": ["readers"]})
        assert deleted["results"] == [{"group_id": "readers", "error_code": 0}]
        assert wire.request(ApiKey.LIST_GROUPS, {"states": None})["groups"] == []


def test_a_stale_epoch_is_fenced_and_an_unknown_member_is_refused(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 1) == 0
        member = Member(wire, ["events"])
        settle(member)
        assert beat(wire, member.member_id, member.epoch + 5)["error_code"] == 110
        assert beat(wire, "someone-else", 1)["error_code"] == 25
        assert beat(wire, "", 0)["error_code"] == 42  # joining needs a subscription
