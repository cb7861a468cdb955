"""What a request over many partitions costs per partition, counted in Python calls (a
profile hook counts every Python function entered), never timed. A request for 2n
partitions against one for n leaves the per-partition part: ListOffsets pays for the log's
own lookup and little more (its metrics are observed once per request), and Metadata builds
a topic's partition list once, until its partitions or their states change."""

from __future__ import annotations

import asyncio
import threading

import msgpack
import pytest

from tests.helpers.cluster_view import MemoryClusterView
from tests.helpers.handlers import call
from tests.helpers.python_calls import count_calls
from tests.helpers.wire import batch
from tslog.broker.cluster.view import NO_LEADER
from tslog.broker.metrics.definitions import TIME_LOOKUP_DURATION, TIME_LOOKUP_SCANNED_BYTES
from tslog.broker.replication.manager import ReplicaManager
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey, RequestHeader, encode_response, split_response
from tslog.protocol.server_codec import NATIVE_CODEC

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
    assert per_partition <= 6.5, per_partition  # 8 before: a get() and a high_watermark each
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


def bytes_packed(run) -> tuple[int, object]:
    """(bytes msgpack packed while ``run()`` ran, its result). ``packing.pack`` keeps one
    Packer per thread, so ``run`` goes in a thread of its own, whose Packer is made while
    ``msgpack.Packer`` is one that adds up what it packs."""
    sizes, result = [], []

    class CountingPacker(msgpack.Packer):
        def pack(self, value):
            packed = super().pack(value)
            sizes.append(len(packed))
            return packed

    original, msgpack.Packer = msgpack.Packer, CountingPacker
    try:
        thread = threading.Thread(target=lambda: result.append(run()))
        thread.start()
        thread.join()
    finally:
        msgpack.Packer = original
    assert result, "run() raised (see the thread's traceback above)"
    return sum(sizes), result[0]


def answer_bytes(broker, api_key, body) -> tuple[int, bytes]:
    """(bytes packed while the handler answered and the codec encoded it, the frame)."""
    header = RequestHeader(api_key, 0, 1, "test")
    return bytes_packed(lambda: b"".join(NATIVE_CODEC.encode(
        header, broker.dispatch[api_key](body), False)))


async def create_topic(broker, name: str, partitions: int) -> None:
    created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": name, "partitions": partitions, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    assert created["topics"][0]["error_code"] == 0


async def test_a_metadata_answer_packs_a_kept_partition_list_once(broker):
    await create_topic(broker, "small", PARTITIONS)
    await create_topic(broker, "large", 4 * PARTITIONS)
    first = {}
    for name in ("small", "large"):
        packed, first[name] = answer_bytes(broker, ApiKey.METADATA, {"topics": [name]})
        assert packed >= len(first[name]) - 20  # built now: its partitions packed once
    for name in ("small", "large"):
        packed, again = answer_bytes(broker, ApiKey.METADATA, {"topics": [name]})
        assert again == first[name]  # the same bytes, from the kept list
        assert packed < 200, (name, packed)  # the envelope and the topic's own fields only
    both, frame = answer_bytes(broker, ApiKey.METADATA, {"topics": None})
    assert both < 300, both
    _, body = split_response(memoryview(frame)[4:])
    assert frame == encode_response(1, body)  # packed ahead, yet what packing it writes
    assert [len(t["partitions"]) for t in body["topics"]] == [4 * PARTITIONS, PARTITIONS]


async def test_a_packed_metadata_answer_is_its_bodys_bytes_in_any_cluster_state(make_broker):
    view = MemoryClusterView(0, {0: ("127.0.0.1", 1), 1: ("127.0.0.1", 2)})
    broker = make_broker(cluster=view)
    await create_topic(broker, "mixed", 4)
    view.set("mixed", 0, leader=0, epoch=3, isr=(0, 1), replicas=(0, 1))
    view.set("mixed", 1, leader=NO_LEADER, epoch=4, isr=(), replicas=(0, 1))
    view.set("mixed", 2, leader=1, epoch=2**31 - 1, isr=(1,), replicas=tuple(range(20)))
    # partition 3 has no state yet: LEADER_NOT_AVAILABLE
    for topics in (None, ["mixed"], ["mixed", "nope", "bad name!", "mixed"], []):
        answer = await call(broker, ApiKey.METADATA, {"topics": topics})
        assert answer.packed == msgpack.packb(dict(answer), use_bin_type=True)
    codes = [p["error_code"] for p in answer_topics(broker, ["mixed"])[0]["partitions"]]
    assert codes == [0, ErrorCode.LEADER_NOT_AVAILABLE, 0, ErrorCode.LEADER_NOT_AVAILABLE]


def answer_topics(broker, names) -> list:
    return broker.dispatch[ApiKey.METADATA]({"topics": names})["topics"]


async def test_building_a_topics_partition_list_costs_few_calls_per_partition(broker):
    await create_topic(broker, "one", PARTITIONS)
    await create_topic(broker, "two", 2 * PARTITIONS)
    few, _ = await counted_calls(broker, ApiKey.METADATA, {"topics": ["one"]})
    many, _ = await counted_calls(broker, ApiKey.METADATA, {"topics": ["two"]})
    per_partition = (many - few) / PARTITIONS
    assert per_partition <= 0.5, per_partition  # 4 before: partition_leader, partition_state and two constructors


async def test_the_replication_loop_scans_the_logs_only_after_one_was_added(broker, monkeypatch):
    """Each turn of the replication loop gave logs created since their state by scanning every
    log: with ten thousand partitions that held the event loop for milliseconds every second,
    and a request arriving then waited. It scans only when a log was added since."""
    await topic_with_one_batch_each(broker, "before", 4)
    scans = []
    real_pick_up = ReplicaManager._pick_up_new_logs
    monkeypatch.setattr(ReplicaManager, "_pick_up_new_logs",
                        lambda self: (scans.append(len(self.hosted.logs)), real_pick_up(self))[1])
    monkeypatch.setattr(ReplicaManager, "check_isr", lambda self, now_ms: 0.01)  # turns, fast
    broker.replicas.start()
    try:
        await asyncio.sleep(0.3)  # some thirty turns of the loop
        assert scans == [4]
        created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
            "topic": "after", "partitions": 2, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 1000})
        assert created["topics"][0]["error_code"] == 0
        await asyncio.sleep(0.3)
        assert scans == [4, 6]
        assert all(("after", p) in broker.replicas.partitions for p in range(2))
    finally:
        await broker.replicas.stop()
