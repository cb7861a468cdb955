"""Consumer groups in a cluster of three real brokers on one etcd, spoken raw
(tests/helpers/wire.py): the controller is every group's coordinator, the other brokers send
clients to it, and when the controller's broker is SIGKILLed the next controller carries the
groups on from etcd: members keep their ids, epochs and partitions, no rejoin."""

from __future__ import annotations

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire
from tests.integration.test_cluster_brokers import (
    FAILOVER_BOUND_S, SESSION_MS, create, metadata, wait_for,
)
from tests.integration.test_consumer_groups_wire import beat, pairs
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(180)

GROUP_SESSION_MS = 45_000  # the coordinator's default: members must survive the failover


@pytest.fixture
def three(cluster_factory) -> list[BrokerProcess]:
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10,
             "every broker has heard of every registration")
    return brokers


def ask(broker: BrokerProcess, api_key: ApiKey, body: dict, version: int = 0) -> dict:
    with Wire(broker.host, broker.port) as wire:
        return wire.request(api_key, body, version=version)


def find_coordinator(broker: BrokerProcess, group: str = "readers") -> dict:
    body = ask(broker, ApiKey.FIND_COORDINATOR, {"key_type": "group", "keys": [group]})
    return body["coordinators"][0]


def controller_of(brokers: list[BrokerProcess]) -> BrokerProcess:
    controller_id = metadata(brokers[0])["controller_id"]
    return next(b for b in brokers if b.node_id == controller_id)


def wait_for_topic(brokers, topic: str) -> None:
    wait_for(lambda: all(any(t["topic"] == topic and t["error_code"] == 0
                             for t in metadata(b)["topics"]) for b in brokers), 10,
             f"every broker knows {topic}")


class Member:
    """A member that gives up what it is told to, and can be pointed at another broker."""

    def __init__(self, broker: BrokerProcess, topics: list[str]) -> None:
        self.broker = broker
        with Wire(broker.host, broker.port) as wire:
            answer = beat(wire, "", 0, topics, [])
        assert answer["error_code"] == 0, answer
        self.member_id = answer["member_id"]
        self.epoch = answer["member_epoch"]
        self.owned = pairs(answer["assignment"])

    def send_heartbeat(self) -> dict:
        owned = [{"topic": t, "partitions": [p]} for t, p in sorted(self.owned)]
        with Wire(self.broker.host, self.broker.port) as wire:
            return beat(wire, self.member_id, self.epoch, None, owned)

    def heartbeat(self) -> dict:
        answer = self.send_heartbeat()
        assert answer["error_code"] == 0, answer
        self.epoch = answer["member_epoch"]
        self.owned = pairs(answer["assignment"])
        return answer

    def commit(self, offsets: dict[tuple[str, int], int]) -> list[int]:
        body = ask(self.broker, ApiKey.OFFSET_COMMIT, {
            "group_id": "readers", "member_id": self.member_id, "member_epoch": self.epoch,
            "topics": [{"topic": t, "partitions": [{"partition": p, "offset": o,
                                                    "metadata": ""}]}
                       for (t, p), o in sorted(offsets.items())]}, version=1)
        return [p["error_code"] for t in body["topics"] for p in t["partitions"]]


def settle(members: list[Member], rounds: int = 10) -> None:
    for _ in range(rounds):
        for member in members:
            member.heartbeat()


def test_every_broker_names_the_controller_and_only_the_controller_coordinates(three):
    controller = controller_of(three)
    for broker in three:
        named = find_coordinator(broker)
        assert (named["error_code"], named["node_id"], named["port"]) == (
            0, controller.node_id, controller.port), f"asked broker {broker.node_id}"
    assert ask(three[0], ApiKey.FIND_COORDINATOR, {"key_type": "group", "keys": [""]})[
        "coordinators"][0]["error_code"] == ErrorCode.INVALID_GROUP_ID
    assert create(controller, "events", 2, 3)["error_code"] == 0
    wait_for_topic(three, "events")

    for other in (b for b in three if b is not controller):
        with Wire(other.host, other.port) as wire:
            assert beat(wire, "", 0, ["events"], [])["error_code"] == ErrorCode.NOT_COORDINATOR
            described = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["readers"]})
            assert described["groups"][0]["error_code"] == ErrorCode.NOT_COORDINATOR
            listed = wire.request(ApiKey.LIST_GROUPS, {"states": None})
            assert (listed["error_code"], listed["groups"]) == (ErrorCode.NOT_COORDINATOR, [])
            deleted = wire.request(ApiKey.DELETE_GROUPS, {"groups": ["readers"]})
            assert deleted["results"][0]["error_code"] == ErrorCode.NOT_COORDINATOR
            committed = wire.request(ApiKey.OFFSET_COMMIT, {"group_id": "readers", "topics": [
                {"topic": "events", "partitions": [{"partition": 0, "offset": 5,
                                                    "metadata": ""}]}]})
            assert committed["topics"][0]["partitions"][0]["error_code"] == \
                ErrorCode.NOT_COORDINATOR
        # Nothing of that reached the group: a refused commit stored no offset.
        fetched = ask(other, ApiKey.OFFSET_FETCH, {"group_id": "readers", "topics": None})
        assert fetched["topics"] == []

    member = Member(controller, ["events"])
    settle([member])
    assert member.owned == {("events", 0), ("events", 1)}
    listed = ask(controller, ApiKey.LIST_GROUPS, {"states": None})
    assert (listed["error_code"], listed["groups"]) == (
        0, [{"group_id": "readers", "state": "STABLE", "members": 1}])


@pytest.mark.slow
def test_members_keep_their_partitions_when_the_controller_dies(three):
    controller = controller_of(three)
    assert create(controller, "events", 6, 3)["error_code"] == 0
    wait_for_topic(three, "events")
    members = [Member(controller, ["events"]) for _ in range(3)]
    settle(members)
    assert [len(m.owned) for m in members] == [2, 2, 2]
    assert set().union(*(m.owned for m in members)) == {("events", p) for p in range(6)}
    committed = {}
    for number, member in enumerate(members):
        offsets = {tp: 100 * number + tp[1] for tp in member.owned}
        assert member.commit(offsets) == [0, 0]
        committed.update(offsets)
    before = {m.member_id: (m.epoch, m.owned) for m in members}

    controller.kill()
    survivors = [b for b in three if b is not controller]
    took = wait_for(lambda: find_coordinator(survivors[0])["node_id"] in
                    {b.node_id for b in survivors}, FAILOVER_BOUND_S,
                    "a survivor names a new coordinator")
    assert took < GROUP_SESSION_MS / 1000
    new_id = find_coordinator(survivors[0])["node_id"]
    assert find_coordinator(survivors[1])["node_id"] == new_id
    successor = next(b for b in survivors if b.node_id == new_id)

    for member in members:
        member.broker = successor
    # The successor may still be reading the groups from etcd: it says so, and is asked again.
    wait_for(lambda: members[0].send_heartbeat()["error_code"] !=
             ErrorCode.COORDINATOR_NOT_AVAILABLE, 10, "the new coordinator has loaded")
    for _ in range(3):
        for member in members:
            member.heartbeat()  # asserts the epoch it has is accepted: no fencing, no rejoin
    assert {m.member_id: (m.epoch, m.owned) for m in members} == before

    group = ask(successor, ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["readers"]})["groups"][0]
    assert (group["error_code"], group["state"]) == (0, "STABLE")
    assert {m["member_id"] for m in group["members"]} == set(before)
    for broker in survivors:
        fetched = ask(broker, ApiKey.OFFSET_FETCH, {"group_id": "readers", "topics": None})
        assert {(t["topic"], p["partition"]): p["offset"] for t in fetched["topics"]
                for p in t["partitions"]} == committed
    # The new coordinator takes the members' commits, and a new member joins as usual.
    assert members[0].commit({tp: 999 for tp in members[0].owned}) == [0, 0]
    fourth = Member(successor, ["events"])
    settle(members + [fourth])
    assert sum(len(m.owned) for m in members + [fourth]) == 6
