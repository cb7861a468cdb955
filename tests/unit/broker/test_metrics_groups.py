"""Consumer-group series of a scrape over a real Broker (handlers called directly): a group's
state, members and rebalances follow its heartbeats; a broker without a running coordinator
(a clustered one between terms as controller) reports no group series, and still its lag;
a deleted group, even one that only committed offsets, leaves no series at all."""

from __future__ import annotations

import asyncio
import dataclasses
import types

import pytest

from tests.helpers.handlers import call
from tests.helpers.prometheus import parse_samples
from tests.helpers.wire import batch
from tests.unit.broker.test_handlers import create, produce
from tslog.broker.metrics.server import render
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(30)

STATE = 'tslog_consumer_group_state{group="g",state="%s"}'


def scrape(sources) -> dict[str, float]:
    return parse_samples(render(sources, asyncio.get_running_loop()).decode())


async def beat(broker, member_id, epoch, topics=None, owned=None):
    return await call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
        "group_id": "g", "member_id": member_id, "member_epoch": epoch,
        "subscribed_topics": topics, "owned": owned})


async def test_state_members_and_rebalances_follow_heartbeats(broker):
    await create(broker, "t", partitions=2)
    joined = await beat(broker, "", 0, ["t"], [])
    member, epoch = joined["member_id"], joined["member_epoch"]
    values = scrape(broker.scrape_sources)
    assert values['tslog_consumer_group_members{group="g"}'] == 1
    assert values['tslog_consumer_group_rebalances_total{group="g"}'] == 1
    assert sum(values[STATE % s] for s in ("empty", "assigning", "reconciling", "stable")) == 1
    assert (await beat(broker, member, epoch, None, joined["assignment"]))["error_code"] == 0
    assert scrape(broker.scrape_sources)[STATE % "stable"] == 1
    assert (await beat(broker, member, -1))["error_code"] == 0  # leaves: the group is empty
    values = scrape(broker.scrape_sources)
    assert values[STATE % "empty"] == 1 and values[STATE % "stable"] == 0
    assert values['tslog_consumer_group_members{group="g"}'] == 0
    assert values['tslog_consumer_group_rebalances_total{group="g"}'] == 2
    deleted = await call(broker, ApiKey.DELETE_GROUPS, {"groups": ["g"]})
    assert deleted["results"][0]["error_code"] == 0
    assert not [name for name in scrape(broker.scrape_sources) if '{group="g"' in name
                and name.startswith(("tslog_consumer_group_state", "tslog_consumer_group_m"))]


async def test_no_coordinator_no_group_series_but_lag_still_reported(broker):
    await create(broker, "t")
    assert (await produce(broker, "t", 0, batch([b"a", b"b"])))["error_code"] == 0
    await beat(broker, "", 0, ["t"], [])
    body = {"group_id": "other", "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "offset": 1, "metadata": ""}]}]}
    assert (await call(broker, ApiKey.OFFSET_COMMIT, body))["topics"][0]["partitions"][0][
        "error_code"] == 0
    idle = dataclasses.replace(broker.scrape_sources,
                               coordination=types.SimpleNamespace(coordinator=None))
    values = scrape(idle)
    assert not [name for name in values if name.startswith("tslog_consumer_group_members")]
    assert values['tslog_consumer_group_lag_records{group="other",partition="0",topic="t"}'] == 1
    assert values['tslog_consumer_group_commits_total{group="other"}'] >= 1


async def test_a_deleted_group_with_only_commits_leaves_no_series(broker):
    await create(broker, "t")
    assert (await produce(broker, "t", 0, batch([b"a", b"b"])))["error_code"] == 0
    body = {"group_id": "gone", "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "offset": 1, "metadata": ""}]}]}
    assert (await call(broker, ApiKey.OFFSET_COMMIT, body))["topics"][0]["partitions"][0][
        "error_code"] == 0
    values = scrape(broker.scrape_sources)
    assert values['tslog_consumer_group_lag_records{group="gone",partition="0",topic="t"}'] == 1
    assert values['tslog_consumer_group_commits_total{group="gone"}'] >= 1
    deleted = await call(broker, ApiKey.DELETE_GROUPS, {"groups": ["gone"]})
    assert deleted["results"][0]["error_code"] == 0
    assert not [name for name in scrape(broker.scrape_sources) if 'group="gone"' in name]
