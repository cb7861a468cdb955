"""Offset commits fenced by the group coordinator, on a real broker spoken raw: a member
commits with its current epoch; a stale epoch, a removed member or a plain client while the
group has members is refused and nothing of the commit is stored (docs/groups.md, "Fencing").
Also: the group settings of the broker's configuration reach the coordinator."""

from __future__ import annotations

import time

import pytest

from tests.helpers.replication import wait_for
from tests.helpers.wire import Wire
from tests.integration.test_consumer_groups_wire import Member, beat, settle
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(120)

UNKNOWN_MEMBER_ID = 25
STALE_MEMBER_EPOCH = 113


def commit(wire: Wire, offsets: dict, member_id: str | None = None, epoch: int = -1,
           group: str = "readers") -> dict:
    """OffsetCommit v1 as the given member; ``member_id`` None sends a v0 body (no member)."""
    topics = [{"topic": topic, "partitions": [{"partition": p, "offset": o, "metadata": ""}]}
              for (topic, p), o in sorted(offsets.items())]
    if member_id is None:
        return wire.request(ApiKey.OFFSET_COMMIT, {"group_id": group, "topics": topics})
    return wire.request(ApiKey.OFFSET_COMMIT, {"group_id": group, "member_id": member_id,
                                               "member_epoch": epoch, "topics": topics},
                        version=1)


def codes(answer: dict) -> list[int]:
    return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]


def committed(wire: Wire, group: str = "readers") -> dict:
    answer = wire.request(ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None})
    return {(t["topic"], p["partition"]): p["offset"]
            for t in answer["topics"] for p in t["partitions"]}


def test_a_member_commits_with_its_current_epoch(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        member = Member(wire, ["events"])
        settle(member)
        answer = commit(wire, {("events", 0): 5, ("events", 1): 7}, member.member_id,
                        member.epoch)
        assert codes(answer) == [0, 0]
        assert committed(wire) == {("events", 0): 5, ("events", 1): 7}


def test_a_stale_epoch_is_refused_on_every_partition_and_nothing_is_stored(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        first = Member(wire, ["events"])
        settle(first)
        old_epoch = first.epoch
        assert codes(commit(wire, {("events", 0): 1}, first.member_id, old_epoch)) == [0]
        second = Member(wire, ["events"])  # the group moves on; first gives a partition up
        settle(first, second)
        assert first.epoch > old_epoch
        answer = commit(wire, {("events", 0): 9, ("events", 1): 9}, first.member_id, old_epoch)
        assert codes(answer) == [STALE_MEMBER_EPOCH, STALE_MEMBER_EPOCH]
        assert committed(wire) == {("events", 0): 1}
        answer = commit(wire, {("events", 0): 9}, first.member_id, first.epoch + 1)  # never given
        assert codes(answer) == [STALE_MEMBER_EPOCH]
        assert committed(wire) == {("events", 0): 1}


def test_a_member_that_left_or_never_joined_is_unknown(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 1) == 0
        stays, leaves = Member(wire, ["events"]), Member(wire, ["events"])
        settle(stays, leaves)
        epoch = leaves.epoch
        assert beat(wire, leaves.member_id, -1)["error_code"] == 0
        assert codes(commit(wire, {("events", 0): 3}, leaves.member_id, epoch)) == [
            UNKNOWN_MEMBER_ID]
        assert codes(commit(wire, {("events", 0): 3}, "stranger", 1)) == [UNKNOWN_MEMBER_ID]
        assert committed(wire) == {}


def test_a_client_outside_the_group_commits_only_while_the_group_is_empty(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 1) == 0
        assert codes(commit(wire, {("events", 0): 2})) == [0]                  # v0, no group
        assert codes(commit(wire, {("events", 0): 3}, "", -1)) == [0]          # v1, no group
        member = Member(wire, ["events"])
        settle(member)
        assert codes(commit(wire, {("events", 0): 8})) == [UNKNOWN_MEMBER_ID]  # v0
        assert codes(commit(wire, {("events", 0): 8}, "", -1)) == [UNKNOWN_MEMBER_ID]
        assert committed(wire) == {("events", 0): 3}
        assert beat(wire, member.member_id, -1)["error_code"] == 0
        assert codes(commit(wire, {("events", 0): 4})) == [0]                  # empty again
        assert committed(wire) == {("events", 0): 4}


def test_a_silent_member_is_removed_after_the_configured_session_timeout(broker_factory):
    broker = broker_factory(env={"TSLOG_GROUP_SESSION_TIMEOUT_MS": "1000",
                                 "TSLOG_GROUP_HEARTBEAT_INTERVAL_MS": "250"})
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 1) == 0
        answer = beat(wire, "", 0, ["events"], [])
        assert answer["error_code"] == 0 and answer["heartbeat_interval_ms"] == 250
        member_id, epoch, joined = answer["member_id"], answer["member_epoch"], time.monotonic()
        assert codes(commit(wire, {("events", 0): 1}, member_id, epoch)) == [0]

        def group_empty() -> bool:
            group = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE,
                                 {"groups": ["readers"]})["groups"][0]
            return not group["members"]

        wait_for(group_empty, 10.0, "the silent member's removal")
        waited = time.monotonic() - joined
        assert 1.0 <= waited < 4.0  # when its 1 s session ran out, not at the 45 s default
        assert codes(commit(wire, {("events", 0): 6}, member_id, epoch)) == [UNKNOWN_MEMBER_ID]
        assert beat(wire, member_id, epoch)["error_code"] == UNKNOWN_MEMBER_ID
        assert committed(wire) == {("events", 0): 1}
