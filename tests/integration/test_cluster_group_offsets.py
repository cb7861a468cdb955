"""Committed group offsets in a cluster: kept in etcd, so every broker answers OffsetFetch with
them, a partition the controller does not host can be committed, and a controller failover
loses none of them."""

from __future__ import annotations

import pytest

from tests.helpers.wire import Wire
from tests.integration.test_cluster_brokers import (
    FAILOVER_BOUND_S, SESSION_MS, create, metadata, wait_for,
)
from tslog.client import Consumer, TopicPartition
from tslog.protocol.messages import ApiKey


@pytest.fixture
def three(cluster_factory):
    brokers = cluster_factory(3, session_timeout_ms=SESSION_MS)
    wait_for(lambda: all(len(metadata(b)["brokers"]) == 3 for b in brokers), 10,
             "every broker has heard of every registration")
    return brokers


def commit(broker, group: str, offsets: dict[tuple[str, int], int]) -> list[int]:
    by_topic: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            {"partition": partition, "offset": offset, "metadata": f"m{offset}"})
    with Wire(broker.host, broker.port) as wire:
        body = wire.request(ApiKey.OFFSET_COMMIT, {"group_id": group, "topics": [
            {"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
    return [p["error_code"] for t in body["topics"] for p in t["partitions"]]


def fetched(broker, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    with Wire(broker.host, broker.port) as wire:
        body = wire.request(ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None})
    return {(t["topic"], p["partition"]): (p["offset"], p["metadata"])
            for t in body["topics"] for p in t["partitions"]}


def test_offsets_survive_the_controller_and_every_broker_answers_them(three):
    # Replication factor 1 over three brokers: most partitions live off the controller.
    assert create(three[0], "solo", 3, 1)["error_code"] == 0
    wait_for(lambda: all(any(t["topic"] == "solo" for t in metadata(b)["topics"])
                         for b in three), 10, "every broker knows the topic")
    controller_id = metadata(three[0])["controller_id"]
    controller = next(b for b in three if b.node_id == controller_id)
    committed = {("solo", 0): 11, ("solo", 1): 22, ("solo", 2): 33}
    assert commit(controller, "readers", committed) == [0, 0, 0]
    expected = {tp: (offset, f"m{offset}") for tp, offset in committed.items()}
    for broker in three:
        wait_for(lambda: fetched(broker, "readers") == expected, 10,
                 f"broker {broker.node_id} answers the committed offsets")
    # An unknown partition is still refused, wherever the commit lands.
    assert commit(controller, "readers", {("solo", 3): 1}) == [3]  # UNKNOWN_TOPIC_OR_PARTITION

    controller.kill()
    rest = [b for b in three if b is not controller]
    wait_for(lambda: metadata(rest[0])["controller_id"] in {b.node_id for b in rest},
             FAILOVER_BOUND_S, "a new controller")
    with Consumer(rest[0].bootstrap, group_id="readers") as consumer:
        for (topic, partition), offset in committed.items():
            assert consumer.committed(TopicPartition(topic, partition)) == offset
    # The new controller takes new commits, laid over the old ones.
    new_controller = next(b for b in rest if b.node_id == metadata(rest[0])["controller_id"])
    assert commit(new_controller, "readers", {("solo", 1): 23}) == [0]
    expected[("solo", 1)] = (23, "m23")
    for broker in rest:
        wait_for(lambda: fetched(broker, "readers") == expected, 10,
                 f"broker {broker.node_id} sees the new commit")
    controller.start()  # a broker that was away catches up from etcd
    wait_for(lambda: fetched(controller, "readers") == expected, 15, "the returning broker")


def test_deleting_a_topic_drops_its_committed_offsets_on_every_broker(three):
    """The deleting broker removes the keys from etcd; the others drop them by the watch,
    and a topic re-created under the name starts every group with nothing committed."""
    assert create(three[0], "gone", 2, 3)["error_code"] == 0
    assert create(three[0], "kept", 1, 3)["error_code"] == 0
    wait_for(lambda: all(len([t for t in metadata(b)["topics"] if t["error_code"] == 0]) == 2
                         for b in three), 10, "every broker knows both topics")
    controller = next(b for b in three if b.node_id == metadata(three[0])["controller_id"])
    assert commit(controller, "readers", {("gone", 0): 5, ("gone", 1): 6, ("kept", 0): 7}) == [
        0, 0, 0]  # commits go to the coordinator, the controller
    wait_for(lambda: all(len(fetched(b, "readers")) == 3 for b in three), 10,
             "every broker answers the commits")
    with Wire(three[1].host, three[1].port) as wire:
        body = wire.request(ApiKey.DELETE_TOPICS, {"topics": ["gone"], "timeout_ms": 5000})
    assert body["topics"][0]["error_code"] == 0
    for broker in three:
        wait_for(lambda: fetched(broker, "readers") == {("kept", 0): (7, "m7")}, 10,
                 f"broker {broker.node_id} forgets the deleted topic's offsets")
    assert create(three[2], "gone", 2, 3)["error_code"] == 0
    with Wire(three[0].host, three[0].port) as wire:
        body = wire.request(ApiKey.OFFSET_FETCH, {"group_id": "readers", "topics": [
            {"topic": "gone", "partitions": [0, 1]}]})
    assert [p["offset"] for p in body["topics"][0]["partitions"]] == [-1, -1]
