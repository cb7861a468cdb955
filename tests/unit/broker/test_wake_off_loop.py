"""A read that names dormant logs (partitions unused since a clean restart) opens them in a
worker thread, so the event loop goes on serving while a ListOffsets or Fetch over ten
thousand of them opens each; a produce opens its log where it stands, so a connection's
batches are appended in the order they were sent. Checked by the thread each log opened
on, never timed."""

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


async def test_a_list_offsets_over_dormant_logs_opens_them_off_the_loop(tmp_path, opened_on):
    broker = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    try:
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
    finally:
        await broker.replicas.stop()
        broker.close()


async def test_a_fetch_over_dormant_logs_opens_them_off_the_loop(tmp_path, opened_on):
    broker = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    try:
        fetched = answers(await call(broker, ApiKey.FETCH, fetch_body(range(LOGS))))
        assert [split_values(e["records"]) for e in fetched] == [
            [(0, b"a%d" % p), (1, b"b%d" % p)] for p in range(LOGS)]
        assert len(opened_on) == LOGS and threading.get_ident() not in opened_on.values()
    finally:
        await broker.replicas.stop()
        broker.close()


async def test_a_produce_opens_its_dormant_log_on_the_loop(tmp_path, opened_on):
    """A produce that waited for a thread could be overtaken by the next one on the same
    connection; it opens its log at once instead."""
    broker = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    try:
        assert (await produce(broker, 7, [b"c7"]))["base_offset"] == 2
        assert opened_on == {"c-7": threading.get_ident()}
    finally:
        await broker.replicas.stop()
        broker.close()


async def test_a_denied_topics_dormant_logs_are_not_opened(tmp_path):
    broker = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    try:
        keys = [("c", p, 0) for p in range(LOGS)]
        assert broker.replicas.claim_dormant(keys, frozenset({"c"})) == []
        assert all(plog.dormant for plog in broker.topics.logs.values())
    finally:
        await broker.replicas.stop()
        broker.close()


async def test_a_read_racing_a_produce_keeps_the_produces_appends(tmp_path):
    """A produce that comes while the thread opens the log gives it its state on the loop;
    the thread's copy of that state, read before the append, is dropped."""
    broker = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    try:
        replicas = broker.replicas
        claimed = replicas.claim_dormant([("c", 2, 0)])
        woken = replicas.wake(claimed)  # the worker thread's part
        assert (await produce(broker, 2, [b"c2"]))["base_offset"] == 2
        state = replicas.partitions["c", 2]
        replicas.adopt(claimed, woken)
        assert replicas.partitions["c", 2] is state
        assert (await produce(broker, 2, [b"d2"]))["base_offset"] == 3
        fetched = answers(await call(broker, ApiKey.FETCH, fetch_body([2])))
        assert [v for _, v in split_values(fetched[0]["records"])] == [b"a2", b"b2", b"c2",
                                                                      b"d2"]
    finally:
        await broker.replicas.stop()
        broker.close()


async def test_logs_a_read_opened_need_no_fsync_at_their_first_write(tmp_path, monkeypatch):
    """Their marker removals are made durable in a worker thread after the read's answer
    (an fsync each for fewer than ``MANY_MARKERS``), so a produce over them right after
    does not wait for an fsync a partition."""
    broker = await restarted_cleanly(BrokerConfig(data_dir=str(tmp_path / "data")))
    synced = []
    real_sync = files.fsync_directory
    monkeypatch.setattr(files, "fsync_directory",
                        lambda path: (synced.append(threading.get_ident()), real_sync(path))[1])
    try:
        await call(broker, ApiKey.LIST_OFFSETS, list_offsets_body(0))
        for _ in range(500):  # the worker thread's fsyncs, after the answer
            if len(synced) == LOGS:
                break
            await asyncio.sleep(0.01)
        assert len(synced) == LOGS and threading.get_ident() not in synced
        for partition in range(LOGS):
            assert (await produce(broker, partition, [b"c"]))["base_offset"] == 2
        assert len(synced) == LOGS
    finally:
        await broker.replicas.stop()
        broker.close()
