"""A request that names dormant logs (partitions unused since a clean restart) opens them in
a worker thread, so the event loop goes on serving while a ListOffsets, Fetch or Produce
over ten thousand of them opens each; Produces still append in the order they came, and a
read sees the writes sent before it. Checked by the thread each log opened on and by the
order of what was written, never timed."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.helpers.handlers import call
from tests.helpers.wire import batch, split_values
from tslog.broker.config import BrokerConfig
from tslog.broker.server.state import Broker
from tslog.broker.storage import PartitionLog, files
from tslog.protocol.messages import LATEST_TIMESTAMP, ApiKey

pytestmark = pytest.mark.timeout(60)

LOGS = 16


async def produce(broker: Broker, partition: int, values: list[bytes]) -> dict:
    body = {"acks": 1, "timeout_ms": 1000, "topics": [{"topic": "c", "partitions": [
        {"partition": partition, "records": batch(values)}]}]}
    return (await call(broker, ApiKey.PRODUCE, body))["topics"][0]["partitions"][0]


async def restarted_cleanly(config: BrokerConfig) -> Broker:
    """A broker whose every partition holds two records, stopped cleanly and opened again:
    every log is dormant."""
    broker = Broker.open(config)
    await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": "c", "partitions": LOGS, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    for partition in range(LOGS):
        assert (await produce(broker, partition, [b"a%d" % partition, b"b%d" % partition])
                )["error_code"] == 0
    broker.close()
    broker = Broker.open(config)
    broker.replicas.start()
    assert all(plog.dormant for plog in broker.topics.logs.values())
    return broker


@pytest.fixture
async def broker(tmp_path):
    restarted = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    yield restarted
    await restarted.replicas.stop()
    restarted.close()


@pytest.fixture
def opened_on(monkeypatch) -> dict[str, int]:
    """The thread (its ident) each log was opened on, by directory name."""
    threads = {}
    real_wake = PartitionLog.wake

    def recording_wake(self):
        if self.dormant:
            threads[self.directory.name] = threading.get_ident()
        return real_wake(self)

    monkeypatch.setattr(PartitionLog, "wake", recording_wake)
    return threads


def list_offsets_body(timestamp: int) -> dict:
    return {"replica_id": -1, "timestamp_type": "append", "topics": [{"topic": "c", "partitions": [
        {"partition": p, "timestamp": timestamp} for p in range(LOGS)]}]}


def fetch_body(partitions) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": "c", "partitions": [
                {"partition": p, "fetch_offset": 0, "max_bytes": 1 << 20} for p in partitions]}]}


def answers(body: dict) -> list[dict]:
    return [entry for group in body["topics"] for entry in group["partitions"]]


async def test_a_list_offsets_over_dormant_logs_opens_them_off_the_loop(broker, opened_on):
    found = answers(await call(broker, ApiKey.LIST_OFFSETS, list_offsets_body(0)))
    assert [(e["error_code"], e["offset"]) for e in found] == [(0, 0)] * LOGS
    assert sorted(opened_on) == sorted(f"c-{p}" for p in range(LOGS))
    assert threading.get_ident() not in opened_on.values()
    assert not any(plog.dormant for plog in broker.topics.logs.values())
    ends = answers(await call(broker, ApiKey.LIST_OFFSETS,
                              list_offsets_body(LATEST_TIMESTAMP)))
    assert [e["offset"] for e in ends] == [2] * LOGS
    # Opened, they have their partition state: a produce appends after the two records.
    assert (await produce(broker, 5, [b"c5"]))["base_offset"] == 2


async def test_a_fetch_over_dormant_logs_opens_them_off_the_loop(broker, opened_on):
    fetched = answers(await call(broker, ApiKey.FETCH, fetch_body(range(LOGS))))
    assert [split_values(e["records"]) for e in fetched] == [
        [(0, b"a%d" % p), (1, b"b%d" % p)] for p in range(LOGS)]
    assert len(opened_on) == LOGS and threading.get_ident() not in opened_on.values()


def produce_body(partition: int, values: list[bytes], acks: int = 1) -> dict:
    return {"acks": acks, "timeout_ms": 1000, "topics": [{"topic": "c", "partitions": [
        {"partition": partition, "records": batch(values)}]}]}


async def test_pipelined_produces_over_dormant_logs_append_in_the_order_they_came(
        broker, opened_on):
    """As a connection hands them over: each request's handler is called before the one
    before it has appended (the connection makes a task of each). The logs open off the
    loop; the batches land in arrival order, and a read sent after them sees them all."""
    handle = broker.dispatch
    pending = [handle[ApiKey.PRODUCE](produce_body(3, [b"x"])),   # opens 3
               handle[ApiKey.PRODUCE](produce_body(4, [b"y"])),   # opens 4
               handle[ApiKey.PRODUCE](produce_body(3, [b"z"])),   # waits for the first
               handle[ApiKey.FETCH](fetch_body([3, 4]))]          # waits for all three
    answers_ = await asyncio.gather(*(asyncio.ensure_future(p) for p in reversed(pending)))
    produced = [answers(a)[0]["base_offset"] for a in reversed(answers_[1:])]
    assert produced == [2, 2, 3]
    fetched = answers(answers_[0])
    assert [[v for _, v in split_values(e["records"])] for e in fetched] == [
        [b"a3", b"b3", b"x", b"z"], [b"a4", b"b4", b"y"]]
    assert sorted(opened_on) == ["c-3", "c-4"]
    assert threading.get_ident() not in opened_on.values()


async def test_an_acks_0_produce_over_a_dormant_log_is_appended_unanswered(broker):
    assert broker.dispatch[ApiKey.PRODUCE](produce_body(6, [b"quiet"], acks=0)) is None
    fetched = answers(await call(broker, ApiKey.FETCH, fetch_body([6])))  # after it
    assert [v for _, v in split_values(fetched[0]["records"])] == [b"a6", b"b6", b"quiet"]


async def test_a_denied_topics_dormant_logs_are_not_opened(broker):
    keys = [("c", p, 0) for p in range(LOGS)]
    assert broker.replicas.dormant_or_held(keys, frozenset({"c"})) is None
    assert len(broker.replicas.dormant_or_held(keys)) == LOGS
    assert all(plog.dormant for plog in broker.topics.logs.values())


async def test_a_read_racing_a_produce_keeps_the_produces_appends(broker):
    """A produce that comes while the thread opens the log gives it its state on the loop;
    the thread's copy of that state, read before the append, is dropped."""
    replicas = broker.replicas
    dormant = replicas.dormant_or_held([("c", 2, 0)])
    replicas.claim([("c", 2)])  # a read's claim, then its thread's part:
    woken = replicas.wake(dormant)
    assert (await produce(broker, 2, [b"c2"]))["base_offset"] == 2
    state = replicas.partitions["c", 2]
    replicas.adopt(woken)
    replicas.release([("c", 2)])
    assert replicas.partitions["c", 2] is state
    assert (await produce(broker, 2, [b"d2"]))["base_offset"] == 3
    fetched = answers(await call(broker, ApiKey.FETCH, fetch_body([2])))
    assert [v for _, v in split_values(fetched[0]["records"])] == [b"a2", b"b2", b"c2",
                                                                  b"d2"]


async def test_logs_a_read_opened_need_no_fsync_at_their_first_write(broker, monkeypatch):
    """Their marker removals are made durable in a worker thread after the read's answer
    (an fsync each for fewer than ``MANY_MARKERS``), so a produce over them right after
    does not wait for an fsync a partition."""
    synced = []
    real_sync = files.fsync_directory
    monkeypatch.setattr(files, "fsync_directory",
                        lambda path: (synced.append(threading.get_ident()), real_sync(path))[1])
    await call(broker, ApiKey.LIST_OFFSETS, list_offsets_body(0))
    for _ in range(500):  # the worker thread's fsyncs, after the answer
        if len(synced) == LOGS:
            break
        await asyncio.sleep(0.01)
    assert len(synced) == LOGS and threading.get_ident() not in synced
    for partition in range(LOGS):
        assert (await produce(broker, partition, [b"c"]))["base_offset"] == 2
    assert len(synced) == LOGS


async def test_a_produce_over_a_dormant_log_syncs_its_marker_off_the_loop(broker,
                                                                          monkeypatch):
    """The marker's removal is durable before the first batch is written, as always; the
    produce's worker thread makes it so, not the loop."""
    synced = []
    real_sync = files.fsync_directory
    monkeypatch.setattr(files, "fsync_directory",
                        lambda path: (synced.append(threading.get_ident()), real_sync(path))[1])
    assert (await produce(broker, 9, [b"c9"]))["base_offset"] == 2
    assert len(synced) == 1 and threading.get_ident() not in synced
    assert (await produce(broker, 9, [b"d9"]))["base_offset"] == 3
    assert len(synced) == 1


async def test_a_waiting_produce_cancelled_before_it_ran_holds_up_no_later_one(broker):
    """A connection closed at once cancels its request's task before its first step; the
    Produces deferred after it still get their turn."""
    first = asyncio.ensure_future(broker.dispatch[ApiKey.PRODUCE](produce_body(3, [b"x"])))
    first.cancel()
    second = broker.dispatch[ApiKey.PRODUCE](produce_body(3, [b"z"]))
    answer = await asyncio.wait_for(second, 10)
    assert answers(answer)[0]["error_code"] == 0
    fetched = answers(await call(broker, ApiKey.FETCH, fetch_body([3])))
    assert [v for _, v in split_values(fetched[0]["records"])][-1] == b"z"
    assert broker.replicas.dormant_or_held([("c", 3, 0)]) is None  # nothing held
