"""A broker's start after a crash makes what recovery checked durable with one file-system
sync for all its logs, not six fsyncs a log (ten thousand logs waited for sixty thousand),
and still moves each recovered log's recovery point to its end. Counted, not timed."""

from __future__ import annotations

import os
import threading

import pytest

from tests.helpers.handlers import call
from tests.helpers.wire import batch, split_values
from tslog.broker import topics as topics_module
from tslog.broker.config import BrokerConfig
from tslog.broker.server.state import Broker
from tslog.broker.storage import files
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(60)

LOGS = 16


@pytest.fixture
def syncs(monkeypatch):
    """Every fsync, fdatasync and file-system sync made, in order."""
    calls = []
    real_fsync, real_fdatasync = os.fsync, os.fdatasync
    real_syncfs = files.sync_filesystem
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "fdatasync",
                        lambda fd: (calls.append("fdatasync"), real_fdatasync(fd))[1])
    monkeypatch.setattr(topics_module, "sync_filesystem",
                        lambda path: (calls.append("syncfs"), real_syncfs(path))[1])
    return calls


async def crashed_broker(config: BrokerConfig) -> dict[int, list[bytes]]:
    """A broker that wrote to every partition and was killed; returns what each holds."""
    broker = Broker.open(config)
    await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": "c", "partitions": LOGS, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    held = {}
    for partition in range(LOGS):
        values = [b"%d-%d" % (partition, i) for i in range(partition % 3 + 1)]
        for value in values:
            body = {"acks": 1, "timeout_ms": 1000, "topics": [{"topic": "c", "partitions": [
                {"partition": partition, "records": batch([value])}]}]}
            answer = await call(broker, ApiKey.PRODUCE, body)
            assert answer["topics"][0]["partitions"][0]["error_code"] == 0
        held[partition] = values
    broker.committer.shutdown()
    broker.topics.io_worker.close()  # the leader-epoch files it was writing are written
    for plog in broker.topics.logs.values():
        plog.close_handles()  # the state a SIGKILL leaves: no flush, checkpoint or marker
    return held


async def test_a_start_after_a_crash_syncs_once_for_all_logs(tmp_path, syncs):
    config = BrokerConfig(data_dir=str(tmp_path / "data"))
    held = await crashed_broker(config)
    syncs.clear()
    broker = Broker.open(config)
    try:
        broker.topics.io_worker.barrier().result(10)  # whatever the open handed it, too
        assert syncs == ["syncfs"], syncs
        broker.replicas.start()  # leads every partition: a consumer reads to the log end
        logs = broker.topics.logs
        assert all(not logs["c", p].recovery_report.clean_shutdown for p in range(LOGS))
        assert sum(logs["c", p].recovery_report.bytes_scanned > 0 for p in range(LOGS)) == LOGS
        for partition, values in held.items():
            plog = logs["c", partition]
            point = (plog.directory / files.RECOVERY_POINT_FILE).read_text().split()
            assert [int(x) for x in point] == [plog.log_end_offset, plog.last_log_append_time]
            fetched = await call(broker, ApiKey.FETCH, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
                "topics": [{"topic": "c", "partitions": [
                    {"partition": partition, "fetch_offset": 0, "max_bytes": 1 << 20}]}]})
            records = fetched["topics"][0]["partitions"][0]["records"]
            assert [value for _, value in split_values(records)] == values
    finally:
        await broker.replicas.stop()
        broker.close()


async def test_a_start_after_a_crash_opens_the_logs_on_one_thread(tmp_path, monkeypatch):
    """Opening a crashed log waits on no fsync (the one sync above comes after), so threads
    would only contend for the GIL at every system call and slow the start down."""
    config = BrokerConfig(data_dir=str(tmp_path / "data"))
    await crashed_broker(config)
    threads = []
    real_log = topics_module.PartitionLog

    def recording_log(*args, **kwargs):
        threads.append(threading.get_ident())
        return real_log(*args, **kwargs)

    monkeypatch.setattr(topics_module, "PartitionLog", recording_log)
    broker = Broker.open(config)
    try:
        assert len(threads) == LOGS and set(threads) == {threading.get_ident()}
        assert all(not plog.recovery_report.clean_shutdown
                   for plog in broker.topics.logs.values())
    finally:
        broker.close()
