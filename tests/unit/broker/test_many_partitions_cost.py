"""What a request over many partitions costs per partition, counted in Python calls (a
profile hook counts every Python function entered), never timed. A request for 2n
partitions against one for n leaves the per-partition part: ListOffsets pays for the log's
own lookup and little more (its metrics are observed once per request), and Metadata builds
a topic's partition list once, until its partitions or their states change."""

from __future__ import annotations

import pytest

from tests.helpers.cluster_view import MemoryClusterView
from tests.helpers.handlers import call
from tests.helpers.python_calls import count_calls
from tests.helpers.wire import batch
from tslog.broker.metrics.definitions import TIME_LOOKUP_DURATION, TIME_LOOKUP_SCANNED_BYTES
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(60)

PARTITIONS = 64


async def counted_calls(broker, api_key, body) -> tuple[int, dict]:
    """(Python function calls made while the handler ran, its response)."""
    return count_calls(lambda: broker.dispatch[api_key](body))


async def topic_with_one_batch_each(broker, name: str, partitions: int) -> None:
    created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": name, "partitions": partitions, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    assert created["topics"][0]["error_code"] == 0
    for partition in range(partitions):
        body = {"acks": 1, "timeout_ms": 1000, "topics": [{"topic": name, "partitions": [
            {"partition": partition, "records": batch([b"%d" % partition] * 3)}]}]}
        produced = await call(broker, ApiKey.PRODUCE, body)
        assert produced["topics"][0]["partitions"][0]["error_code"] == 0


def list_offsets_body(name: str, partitions: int, timestamp: int) -> dict:
    return {"replica_id": -1, "timestamp_type": "append", "topics": [{"topic": name, "partitions": [
        {"partition": p, "timestamp": timestamp} for p in range(partitions)]}]}


def histogram_count(family) -> int:
    return sum(family.labels().counts)


@pytest.mark.parametrize("timestamp", [0, "first"])
async def test_a_list_offsets_for_many_partitions_costs_a_few_calls_per_partition(
        broker, timestamp):
    await topic_with_one_batch_each(broker, "many", 2 * PARTITIONS)
    first_time = (await call(broker, ApiKey.LIST_OFFSETS, list_offsets_body("many", 1, 0))
                  )["topics"][0]["partitions"][0]["timestamp"]
    target = 0 if timestamp == 0 else first_time
    observed = histogram_count(TIME_LOOKUP_DURATION), histogram_count(TIME_LOOKUP_SCANNED_BYTES)
    few, answer = await counted_calls(broker, ApiKey.LIST_OFFSETS,
                                      list_offsets_body("many", PARTITIONS, target))
    many, _ = await counted_calls(broker, ApiKey.LIST_OFFSETS,
                                  list_offsets_body("many", 2 * PARTITIONS, target))
    found = answer["topics"][0]["partitions"]
    assert [(p["error_code"], p["offset"]) for p in found] == [(0, 0)] * PARTITIONS
    per_partition = (many - few) / PARTITIONS
    assert per_partition <= 14, per_partition  # 22 before: two observations each, and more
    # Each lookup is counted in both histograms, in one observation per request.
    assert histogram_count(TIME_LOOKUP_DURATION) == observed[0] + 3 * PARTITIONS
    assert histogram_count(TIME_LOOKUP_SCANNED_BYTES) == observed[1] + 3 * PARTITIONS


async def test_metadata_builds_a_topics_partition_list_once_until_it_changes(broker):
    await topic_with_one_batch_each(broker, "kept", PARTITIONS)
    everything = {"topics": None}
    first = await call(broker, ApiKey.METADATA, everything)
    builds = broker.partition_lists.builds
    calls, again = await counted_calls(broker, ApiKey.METADATA, everything)
    assert again == first and broker.partition_lists.builds == builds
    assert calls < PARTITIONS / 2, calls  # no call per partition: the kept list is sent
    grown = await call(broker, ApiKey.CREATE_PARTITIONS, {"topics": [
        {"topic": "kept", "count": PARTITIONS + 2}], "validate_only": False, "timeout_ms": 1000})
    assert grown["topics"][0]["error_code"] == 0
    after = await call(broker, ApiKey.METADATA, {"topics": ["kept"]})
    assert [p["partition"] for p in after["topics"][0]["partitions"]] == list(
        range(PARTITIONS + 2))
    deleted = await call(broker, ApiKey.DELETE_TOPICS, {"topics": ["kept"], "timeout_ms": 1000})
    assert deleted["topics"][0]["error_code"] == 0
    assert (await call(broker, ApiKey.METADATA, everything))["topics"] == []


async def test_metadata_shows_a_partitions_new_leader_and_isr_at_once(make_broker):
    view = MemoryClusterView(0, {0: ("127.0.0.1", 1), 1: ("127.0.0.1", 2)})
    broker = make_broker(cluster=view)
    created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": "moving", "partitions": 3, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    assert created["topics"][0]["error_code"] == 0
    for partition in range(3):
        view.set("moving", partition, leader=0, epoch=0, isr=(0, 1), replicas=(0, 1))

    def leaders(response):
        return [(p["leader"], p["leader_epoch"], p["isr"])
                for p in response["topics"][0]["partitions"]]

    asked = {"topics": ["moving"]}
    assert leaders(await call(broker, ApiKey.METADATA, asked)) == [(0, 0, [0, 1])] * 3
    view.set("moving", 1, leader=1, epoch=1, isr=(1,), replicas=(0, 1))
    assert leaders(await call(broker, ApiKey.METADATA, asked)) == [
        (0, 0, [0, 1]), (1, 1, [1]), (0, 0, [0, 1])]
