"""The leader's replication rules, through the handlers, with an in-memory cluster view.

Broker 0 holds the logs; the view (a test double of the control plane, not of a broker) says
who leads. "Followers" here are Fetch requests with replica_id 1 or 2, exactly what a
follower broker sends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest

from tests.helpers.cluster_view import MemoryClusterView
from tests.helpers.handlers import call
from tests.helpers.wire import batch
from tslog.broker.storage.replica import ReplicaLog
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch

pytestmark = pytest.mark.timeout(30)




def first(response):
    return response["topics"][0]["partitions"][0]


@pytest.fixture
async def cluster(make_broker):
    """Broker 0 with topic t (1 partition) led by it in epoch 1, ISR {0, 1, 2}; brokers 1
    and 2 registered (live)."""
    view = MemoryClusterView(0, {n: ("127.0.0.1", n + 1) for n in range(3)})
    broker = make_broker(cluster=view)
    body = {"topics": [{"topic": "t", "partitions": 1, "replication_factor": 1,
                        "configs": {"replica.lag.time.max.ms": "1000"}}], "timeout_ms": 1000}
    assert (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]["error_code"] == 0
    view.set("t", 0, leader=0, epoch=1, isr=(0, 1, 2))
    broker.replicas.start()
    yield broker, view
    await broker.replicas.stop()


async def produce(broker, records, acks=1, timeout_ms=5000, partition=0):
    body = {"acks": acks, "timeout_ms": timeout_ms, "topics": [
        {"topic": "t", "partitions": [{"partition": partition, "records": records}]}]}
    return first(await call(broker, ApiKey.PRODUCE, body))


async def fetch(broker, offset, replica_id=-1):
    body = {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": offset, "max_bytes": 1 << 20}]}]}
    return first(await call(broker, ApiKey.FETCH, body))


async def latest(broker, replica_id=-1, timestamp=-1):
    body = {"replica_id": replica_id, "timestamp_type": "append", "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "timestamp": timestamp}]}]}
    return first(await call(broker, ApiKey.LIST_OFFSETS, body))


async def test_consumers_see_only_what_every_in_sync_replica_has(cluster):
    broker, _ = cluster
    written = await produce(broker, batch([b"a", b"b"]))
    assert written["error_code"] == 0
    assert (await fetch(broker, 0))["records"] == b""  # HW 0: nothing committed yet
    assert (await latest(broker))["offset"] == 0
    assert (await latest(broker, timestamp=written["log_append_time"]))["offset"] == -1
    copy = await fetch(broker, 0, replica_id=1)
    assert copy["records"] and copy["high_watermark"] == 0  # followers read to the log end
    await fetch(broker, 2, replica_id=1)
    assert (await fetch(broker, 0))["records"] == b""  # replica 2 has not fetched yet
    await fetch(broker, 2, replica_id=2)
    committed = await fetch(broker, 0)
    assert committed["high_watermark"] == 2 and committed["records"]
    assert (await latest(broker))["offset"] == 2
    assert (await latest(broker, timestamp=written["log_append_time"]))["offset"] == 0


async def test_acks_all_answers_once_the_high_watermark_passes_the_batch(cluster):
    broker, _ = cluster
    pending = asyncio.ensure_future(produce(broker, batch([b"x"]), acks=-1))
    await asyncio.sleep(0.05)
    assert not pending.done()
    await fetch(broker, 1, replica_id=1)
    await asyncio.sleep(0.01)
    assert not pending.done()
    await fetch(broker, 1, replica_id=2)
    answer = await asyncio.wait_for(pending, 5)
    assert answer["error_code"] == 0 and answer["base_offset"] == 0


@pytest.fixture
def stuck_disk(cluster, monkeypatch):
    """t-0's log, whose fsyncs hang (a stuck disk) until the returned event is set."""
    broker, _ = cluster
    plog = broker.topics.get_log("t", 0)
    released = threading.Event()
    flush = plog.flush

    def stuck_flush():
        released.wait(10)
        return flush()

    monkeypatch.setattr(plog, "flush", stuck_flush)
    yield plog, released
    released.set()


async def appended_acks_all_produce(broker) -> asyncio.Future:
    """An acks=all produce of one record, appended and waiting for its answer."""
    pending = asyncio.ensure_future(produce(broker, batch([b"x"]), acks=-1))
    await asyncio.sleep(0.02)
    return pending


async def test_acks_all_with_followers_waits_for_their_copies_not_for_the_disk(cluster,
                                                                              stuck_disk):
    broker, _ = cluster
    plog, _ = stuck_disk
    pending = await appended_acks_all_produce(broker)
    await fetch(broker, 1, replica_id=1)
    await fetch(broker, 1, replica_id=2)
    answer = await asyncio.wait_for(pending, 5)
    assert answer["error_code"] == 0
    assert plog.recovery_point == 0  # as in Kafka: three copies, none fsynced yet


async def test_acks_all_fsyncs_the_only_copy_when_the_followers_leave_the_isr(cluster,
                                                                              stuck_disk):
    broker, view = cluster
    plog, disk = stuck_disk
    pending = await appended_acks_all_produce(broker)
    view.set("t", 0, leader=0, epoch=1, isr=(0,))  # the HW passes the batch this way
    await asyncio.sleep(0.1)
    assert not pending.done()  # the leader's copy, now the only one, is not on disk
    disk.set()
    answer = await asyncio.wait_for(pending, 5)
    assert answer["error_code"] == 0 and plog.recovery_point == 1


async def test_acks_all_times_out_when_followers_do_not_fetch(cluster):
    broker, _ = cluster
    answer = await produce(broker, batch([b"x"]), acks=-1, timeout_ms=100)
    assert answer["error_code"] == ErrorCode.REQUEST_TIMED_OUT


async def test_min_insync_replicas_refuses_acks_all_and_writes_nothing(cluster):
    broker, view = cluster
    alter = {"resources": [{"type": "topic", "name": "t",
                            "configs": {"min.insync.replicas": "2"}}], "validate_only": False}
    assert (await call(broker, ApiKey.ALTER_CONFIGS, alter))["resources"][0]["error_code"] == 0
    view.set("t", 0, leader=0, epoch=1, isr=(0,))
    answer = await produce(broker, batch([b"x"]), acks=-1)
    assert answer["error_code"] == ErrorCode.NOT_ENOUGH_REPLICAS
    assert broker.topics.get_log("t", 0).log_end_offset == 0
    assert (await produce(broker, batch([b"x"]), acks=1))["error_code"] == 0


async def test_a_follower_refuses_produce_fetch_and_list_offsets_until_it_leads(cluster):
    broker, view = cluster
    view.set("t", 0, leader=1, epoch=2, isr=(0, 1, 2))
    assert (await produce(broker, batch([b"x"])))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (await fetch(broker, 0))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (await latest(broker))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    view.set("t", 0, leader=0, epoch=3, isr=(0,))
    written = await produce(broker, batch([b"x"]), acks=-1)
    assert written["error_code"] == 0
    stored = (await fetch(broker, 0))["records"]
    assert int.from_bytes(stored[8:12], "little") == 3  # stamped with the new epoch


async def test_a_partition_of_a_known_topic_hosted_elsewhere_answers_not_leader(cluster):
    broker, view = cluster
    view.set("two", 0, leader=0, epoch=0, isr=(0,))
    body = {"topics": [{"topic": "two", "partitions": 2, "replication_factor": 1,
                        "configs": {}}], "timeout_ms": 1000}
    assert (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]["error_code"] == 0
    broker.topics.logs.pop(("two", 1)).close()  # as on a broker that holds no replica of it
    produce_body = {"acks": 1, "timeout_ms": 1000, "topics": [{"topic": "two", "partitions": [
        {"partition": p, "records": batch([b"x"])} for p in (0, 1, 2)]}]}
    answers = (await call(broker, ApiKey.PRODUCE, produce_body))["topics"][0]["partitions"]
    assert [a["error_code"] for a in answers] == [
        0, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


async def test_a_state_older_than_the_one_applied_is_ignored(cluster):
    broker, view = cluster
    current = view.states["t", 0]
    view.set("t", 0, leader=0, epoch=1, isr=(0, 1, 2))
    broker.replicas.on_state(dataclasses.replace(current, leader=2))  # delivered late
    assert (await produce(broker, batch([b"x"])))["error_code"] == 0


async def test_a_lagging_follower_leaves_the_isr_and_rejoins_when_caught_up(cluster):
    broker, view = cluster
    await produce(broker, batch([b"a"]))
    broker.clock.offset_ms += 2000  # replica 2 has not caught up for 2 s > 1 s allowed
    await fetch(broker, 1, replica_id=1)  # replica 1 is at the log end now
    broker.replicas.check_isr(broker.clock.now_ms())
    await asyncio.sleep(0.05)
    assert view.states["t", 0].isr == (0, 1)
    assert (await fetch(broker, 0))["high_watermark"] == 1  # HW moves without replica 2
    await fetch(broker, 1, replica_id=2)
    await asyncio.sleep(0.05)
    assert view.states["t", 0].isr == (0, 1, 2)


async def test_a_caught_up_follower_the_view_counts_as_dead_does_not_rejoin(cluster):
    """The controller drops an unregistered broker from the ISR at once; a leader adding it
    back each time it fetches kept the two undoing each other, a proposal always in flight."""
    broker, view = cluster
    await produce(broker, batch([b"a"]))
    broker.clock.offset_ms += 2000
    await fetch(broker, 1, replica_id=1)
    broker.replicas.check_isr(broker.clock.now_ms())
    await asyncio.sleep(0.05)
    assert view.states["t", 0].isr == (0, 1)
    del view.addresses[2]  # its session ended: not registered
    await fetch(broker, 1, replica_id=2)
    await asyncio.sleep(0.05)
    assert view.states["t", 0].isr == (0, 1)
    view.addresses[2] = ("127.0.0.1", 3)  # registered again
    await fetch(broker, 1, replica_id=2)
    await asyncio.sleep(0.05)
    assert view.states["t", 0].isr == (0, 1, 2)


async def test_a_leader_whose_proposal_is_refused_stops_acknowledging(cluster):
    broker, view = cluster
    pending = asyncio.ensure_future(produce(broker, batch([b"a"]), acks=-1))
    await asyncio.sleep(0.02)
    view.refuse_proposals = True
    broker.clock.offset_ms += 5000
    broker.replicas.check_isr(broker.clock.now_ms())
    answer = await asyncio.wait_for(pending, 5)
    assert answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (await produce(broker, batch([b"b"])))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_newer_leader_epoch_is_stamped_and_answered_by_offset_for_leader_epoch(cluster):
    broker, view = cluster
    await produce(broker, batch([b"a", b"b"]))
    view.set("t", 0, leader=0, epoch=4, isr=(0, 1, 2))
    await produce(broker, batch([b"c"]))
    body = {"replica_id": 1, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "leader_epoch": e} for e in (1, 3, 4, 0)]}]}
    answers = (await call(broker, ApiKey.OFFSET_FOR_LEADER_EPOCH, body))["topics"][0]["partitions"]
    assert [(a["leader_epoch"], a["end_offset"]) for a in answers] == [
        (1, 2), (1, 2), (4, 3), (-1, -1)]
    copy = (await fetch(broker, 2, replica_id=1))["records"]
    assert int.from_bytes(copy[8:12], "little") == 4


def idempotent(seq, values=(b"v",), pid=77):
    return build_batch(list(values), producer_id=pid, producer_epoch=0, base_sequence=seq)


async def test_a_retried_idempotent_batch_is_answered_with_its_first_offsets(cluster):
    broker, _ = cluster
    first_try = await produce(broker, idempotent(0, (b"a", b"b")))
    retry = await produce(broker, idempotent(0, (b"a", b"b")))
    assert (retry["error_code"], retry["base_offset"], retry["log_append_time"]) == (
        0, first_try["base_offset"], first_try["log_append_time"])
    assert broker.topics.get_log("t", 0).log_end_offset == 2
    gap = await produce(broker, idempotent(5))
    assert gap["error_code"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    two = await produce(broker, idempotent(2) + idempotent(3))
    assert two["error_code"] == ErrorCode.INVALID_RECORD
    assert (await produce(broker, idempotent(2)))["base_offset"] == 2


async def test_init_producer_id_hands_out_distinct_ids(cluster):
    broker, _ = cluster
    ids = {(await call(broker, ApiKey.INIT_PRODUCER_ID, {}))["producer_id"] for _ in range(3)}
    assert len(ids) == 3


async def test_the_high_watermark_never_steps_back_when_the_isr_grows(cluster):
    broker, view = cluster
    view.set("t", 0, leader=0, epoch=1, isr=(0,))
    await produce(broker, batch([b"a", b"b"]))
    assert (await fetch(broker, 0))["high_watermark"] == 2  # alone: committed at once
    view.set("t", 0, leader=0, epoch=1, isr=(0, 1))
    answer = await fetch(broker, 0)
    assert answer["high_watermark"] == 2 and answer["records"]


async def test_the_periodic_checkpoint_persists_the_high_watermark_off_the_loop(cluster):
    from tslog.broker.server.listener import _checkpoints

    broker, _ = cluster
    await produce(broker, batch([b"a", b"b"]))
    await produce(broker, batch([b"c"]))
    await fetch(broker, 3, replica_id=1)
    await fetch(broker, 2, replica_id=2)  # replica 2 lacks the last batch: HW 2, LEO 3
    await _checkpoints(broker)
    directory = broker.topics.get_log("t", 0).directory
    assert (directory / "high-watermark").read_text() == "2\n"
    # Reopened (as after a restart), the replica starts from it, not from its log end.
    assert ReplicaLog(broker.topics.get_log("t", 0)).high_watermark == 2


async def test_the_replication_state_of_a_new_topic_is_built_on_the_loop_without_a_header_scan(
        make_broker, monkeypatch):
    """A log created while the broker runs holds no batch: the loop builds its ReplicaLog
    from nothing (logs opened from disk got theirs in the opening thread, open_all)."""
    from tslog.broker.storage import replica as replica_module

    def no_scan(*_):
        raise AssertionError("a header scan on the event loop")

    broker = make_broker()
    body = {"topics": [{"topic": "t", "partitions": 2, "replication_factor": 1,
                        "configs": {}}], "timeout_ms": 1000}
    assert (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]["error_code"] == 0
    monkeypatch.setattr(replica_module, "headers_from", no_scan)
    assert (await produce(broker, batch([b"a"])))["error_code"] == 0
    assert broker.replicas.get("t", 1) is not None
