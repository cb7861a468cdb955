"""A broker's start after a clean stop opens no log: each partition costs a stat of its
clean-shutdown marker and a read of its producer snapshot (the largest producer id), no
segment file, no map and no sync; the first request to a partition opens that one. Counted
by wrapping the calls, never timed."""

from __future__ import annotations

import os

import pytest

from tests.helpers.handlers import call
from tests.helpers.wire import batch, split_values
from tslog.broker import topics as topics_module
from tslog.broker.config import BrokerConfig
from tslog.broker.server.state import Broker
from tslog.broker.storage import files, maps
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch

pytestmark = pytest.mark.timeout(60)

LOGS = 16


async def produce(broker: Broker, partition: int, records: bytes) -> dict:
    body = {"acks": 1, "timeout_ms": 1000, "topics": [{"topic": "c", "partitions": [
        {"partition": partition, "records": records}]}]}
    return (await call(broker, ApiKey.PRODUCE, body))["topics"][0]["partitions"][0]


async def fetch(broker: Broker, partition: int) -> list[tuple[int, bytes]]:
    answer = await call(broker, ApiKey.FETCH, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "topics": [{"topic": "c", "partitions": [
            {"partition": partition, "fetch_offset": 0, "max_bytes": 1 << 20}]}]})
    return split_values(answer["topics"][0]["partitions"][0]["records"])


async def stopped_broker(config: BrokerConfig) -> int:
    """A broker that wrote to every partition (an idempotent producer to the last one) and
    stopped cleanly; returns that producer's id."""
    broker = Broker.open(config)
    await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": "c", "partitions": LOGS, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    for partition in range(LOGS - 1):
        assert (await produce(broker, partition, batch([b"p%d" % partition])))["error_code"] == 0
    producer_id = (await call(broker, ApiKey.INIT_PRODUCER_ID, {}))["producer_id"]
    idempotent = build_batch([b"once"], producer_id=producer_id, producer_epoch=0,
                             base_sequence=0)
    assert (await produce(broker, LOGS - 1, idempotent))["error_code"] == 0
    broker.close()
    return producer_id


@pytest.fixture
def opened(monkeypatch):
    """Every file opened and every sync made while counting (``opened["files"]``)."""
    counted = {"files": [], "syncs": 0}
    real_open, real_syncfs, real_fsync = os.open, files.sync_filesystem, os.fsync

    def counting_open(path, *args, **kwargs):
        counted["files"].append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    def count_sync(sync):
        def counting(*args):
            counted["syncs"] += 1
            return sync(*args)
        return counting

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "fsync", count_sync(real_fsync))
    monkeypatch.setattr(topics_module, "sync_filesystem", count_sync(real_syncfs))
    return counted


async def test_a_clean_start_opens_no_log_and_the_first_request_opens_one(tmp_path, opened,
                                                                           monkeypatch):
    config = BrokerConfig(data_dir=str(tmp_path / "data"))
    producer_id = await stopped_broker(config)
    opened["files"].clear()
    opened["syncs"] = 0
    maps_before = maps.maps_made
    broker = Broker.open(config)
    try:
        broker.replicas.start()
        partition_files = [path for path in opened["files"] if f"{os.sep}c-" in path]
        assert [os.path.basename(p) for p in partition_files] == ["producer-state"] * LOGS
        assert (maps.maps_made - maps_before, opened["syncs"]) == (0, 0)
        logs = broker.topics.logs
        assert all(logs["c", p].dormant for p in range(LOGS))
        assert broker.replicas.largest_producer_id() == producer_id  # from the snapshot
        monkeypatch.undo()

        assert await fetch(broker, 3) == [(0, b"p3")]  # the first use opens that log alone
        assert [p for p in range(LOGS) if not logs["c", p].dormant] == [3]
        assert (await produce(broker, 4, batch([b"again"])))["base_offset"] == 1
        assert [p for p in range(LOGS) if not logs["c", p].dormant] == [3, 4]
        fresh = (await call(broker, ApiKey.INIT_PRODUCER_ID, {}))["producer_id"]
        assert fresh > producer_id  # no id of a log left unopened is handed out again
    finally:
        await broker.replicas.stop()
        broker.close()
    for partition in range(LOGS):  # closed dormant or not, every log is clean again
        assert (tmp_path / "data" / f"c-{partition}" / files.CLEAN_SHUTDOWN_FILE).exists()
