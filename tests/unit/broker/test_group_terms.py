"""``GroupService`` terms: a clustered broker coordinates only while it is handed a store (a
controller epoch's), rebuilds the groups from each new store, keeps trying a store it could
not read, and after ``stop`` never coordinates again."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from tslog.broker.metadata import TopicMetadata
from tslog.broker.server.clock import BrokerClock
from tslog.broker.groups.service import GroupService
from tslog.protocol.errors import ErrorCode

pytestmark = pytest.mark.timeout(30)


class Records:
    """Group records in memory; ``unreadable`` loads fail with OSError, as etcd's may."""

    def __init__(self, records=(), unreadable: int = 0) -> None:
        self.records = {record["group_id"]: record for record in records}
        self.unreadable = unreadable

    async def load(self) -> list[dict]:
        if self.unreadable:
            self.unreadable -= 1
            raise OSError("etcd did not answer in time")
        return list(self.records.values())

    async def write(self, group_id: str, record: dict) -> None:
        self.records[group_id] = record

    async def delete(self, group_id: str) -> None:
        self.records.pop(group_id, None)


def service() -> GroupService:
    # The service reads only the topic catalog's partition counts.
    topics = SimpleNamespace(topics={"events": TopicMetadata("events", 2, {}, 1)})
    return GroupService(None, topics, BrokerClock(0))


async def until(predicate, what: str, timeout_s: float = 5.0) -> None:
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout_s, f"not within {timeout_s} s: {what}"
        await asyncio.sleep(0.01)


async def test_a_clustered_service_coordinates_only_during_a_term():
    groups = service()
    idle = await groups.heartbeat("readers", "", 0, ["events"], None)
    assert idle.error is ErrorCode.COORDINATOR_NOT_AVAILABLE and groups.coordinator is None
    first = Records()
    groups.serve_with(first)
    await until(lambda: groups.active, "the term starts")
    joined = await groups.heartbeat("readers", "", 0, ["events"], None)
    assert joined.error is ErrorCode.NONE
    assert first.records["readers"]["members"][0]["member_id"] == joined.member_id

    # A new epoch's store holding another history: the group is rebuilt from it alone.
    second = Records([dict(first.records["readers"], group_epoch=9, assignment_epoch=9)])
    groups.serve_with(second)
    await until(lambda: groups.active and groups.coordinator.describe("readers").group_epoch
                == 9, "the second term holds the second store's group")
    groups.serve_with(None)
    await until(lambda: not groups.active, "the term ends")
    assert (await groups.delete_group("readers")) is ErrorCode.COORDINATOR_NOT_AVAILABLE
    await groups.stop()


async def test_an_unreadable_store_is_tried_again_and_stop_is_final():
    groups = service()
    store = Records(unreadable=1)
    groups.serve_with(store)
    await until(lambda: store.unreadable == 0, "the first load is tried")
    assert not groups.active  # it failed: no term until the retry half a second later
    await until(lambda: groups.active, "the load is retried")
    await groups.stop()
    assert not groups.active
    groups.serve_with(Records())  # a late change of controller after shutdown
    assert not groups.active and groups.coordinator is None
