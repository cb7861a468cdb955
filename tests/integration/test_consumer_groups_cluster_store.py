"""The consumer groups' state in etcd against a real etcd, in this process: a controller's
writes are fenced on its controller epoch, so a deposed controller cannot overwrite what its
successor wrote, and its heartbeats answer COORDINATOR_NOT_AVAILABLE instead; the successor
restores every member as it was."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import pytest

from tslog.broker.cluster.etcd import Etcd
from tslog.broker.groups.state_etcd import EtcdGroupStateStore, FencedWriteError
from tslog.broker.cluster.records import ClusterKeys
from tslog.broker.metadata import TopicMetadata
from tslog.broker.server.clock import BrokerClock
from tslog.broker.groups.service import GroupService
from tslog.protocol.errors import ErrorCode


@pytest.fixture
async def etcd_client(etcd):
    host, port = etcd.endpoint.rsplit(":", 1)
    client = Etcd([(host, int(port))])
    await client.connect()
    yield client
    await client.close()


async def take_controller_key(etcd: Etcd, keys: ClusterKeys, node_id: int) -> int:
    """(Re)create the controller key as a newly elected controller does; its epoch."""
    await etcd.txn([], [etcd.delete(keys.controller)])
    ok, _ = await etcd.txn([etcd.absent(keys.controller)], [
        etcd.put(keys.controller, json.dumps({"node_id": node_id}).encode())])
    assert ok
    return (await etcd.get(keys.controller)).create_revision


async def test_a_deposed_controllers_writes_are_refused(etcd_client):
    keys = ClusterKeys("fencing")
    first = EtcdGroupStateStore(etcd_client, keys, await take_controller_key(etcd_client, keys, 0))
    await first.write("readers", {"group_id": "readers", "by": "first"})
    assert await first.load() == [{"group_id": "readers", "by": "first"}]

    second = EtcdGroupStateStore(etcd_client, keys,
                                 await take_controller_key(etcd_client, keys, 1))
    with pytest.raises(FencedWriteError):
        await first.write("readers", {"group_id": "readers", "by": "first, late"})
    with pytest.raises(FencedWriteError):
        await first.delete("readers")
    assert await second.load() == [{"group_id": "readers", "by": "first"}]
    await second.write("readers", {"group_id": "readers", "by": "second"})
    await second.write("other/group", {"group_id": "other/group", "by": "second"})
    assert sorted(r["group_id"] for r in await second.load()) == ["other/group", "readers"]
    await second.delete("other/group")
    assert await second.load() == [{"group_id": "readers", "by": "second"}]


async def _until(predicate, timeout_s: float, what: str) -> None:
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout_s, f"not within {timeout_s} s: {what}"
        await asyncio.sleep(0.01)


def _service() -> GroupService:
    # The service reads only the topic catalog's partition counts.
    topics = SimpleNamespace(topics={"events": TopicMetadata("events", 4, {}, 1)})
    return GroupService(None, topics, BrokerClock(0))


async def test_a_fenced_heartbeat_is_not_answered_and_the_successor_restores_the_group(
        etcd_client):
    keys = ClusterKeys("failover")
    old = _service()
    old.serve_with(EtcdGroupStateStore(etcd_client, keys,
                                       await take_controller_key(etcd_client, keys, 0)))
    await _until(lambda: old.active, 5, "the first controller coordinates")
    first = await old.heartbeat("readers", "", 0, ["events"], None)
    assert first.error is ErrorCode.NONE and len(first.assignment) == 4

    successor_epoch = await take_controller_key(etcd_client, keys, 1)
    # The deposed controller has not noticed yet: a change it cannot store is not answered.
    late = await old.heartbeat("readers", "", 0, ["events"], None)
    assert late.error is ErrorCode.COORDINATOR_NOT_AVAILABLE and late.assignment is None

    new = _service()
    new.serve_with(EtcdGroupStateStore(etcd_client, keys, successor_epoch))
    await _until(lambda: new.active, 5, "the successor coordinates")
    again = await new.heartbeat("readers", first.member_id, first.member_epoch,
                                None, sorted(first.assignment))
    assert (again.error, again.member_epoch) == (ErrorCode.NONE, first.member_epoch)
    described = new.coordinator.describe("readers")
    assert [m.member_id for m in described.members] == [first.member_id]  # the late join's
    # member never existed anywhere but the deposed controller's memory.
    old.serve_with(None)  # the watch shows the new controller: the old term ends
    await _until(lambda: not old.active, 5, "the old controller stops coordinating")
    assert old.coordinator is None
    await old.stop()
    await new.stop()
    assert not new.active
