"""``serve`` in process: readiness, an injected shutdown trigger, and a clean stop."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest

from tests.helpers.wire import batch
from tslog.broker.config import BrokerConfig
from tslog.broker.server import serve
from tslog.protocol.frames import FrameReceiver
from tslog.protocol.messages import ApiKey, RequestHeader, decode_response, encode_request

pytestmark = pytest.mark.timeout(30)


async def roundtrip(port: int, api_key: ApiKey, body: dict) -> dict:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(encode_request(RequestHeader(api_key, 0, 5, "test"), body))
    decoder, frames = FrameReceiver(), []
    while not frames:
        frames = decoder.feed(await reader.read(65536))
    writer.close()
    return decode_response(frames[0], api_key)[1]


@contextlib.asynccontextmanager
async def stuck_disk_broker(config: BrokerConfig, release: threading.Event):
    """``serve`` in this loop; yields its port. The test's stuck disk write is released
    before the broker stops (its shutdown waits for the thread)."""
    stop = asyncio.Event()
    ready = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(serve(config, shutdown_trigger=stop.wait(),
                                       ready=lambda host, port: ready.set_result(port)))
    try:
        yield await asyncio.wait_for(ready, 10)
    finally:
        release.set()
        stop.set()
        await asyncio.wait_for(server, 20)


def stalling(real, entered: threading.Event, release: threading.Event):
    """``real`` behind a disk that takes its time: it signals ``entered``, then waits."""
    def write(*args, **kwargs):
        entered.set()
        release.wait(20)
        return real(*args, **kwargs)
    return write


async def three_produces_answered_in_time(port: int) -> None:
    """Three produces to topic t, each answered within 5 s and at the next offset."""
    for i in range(3):
        produced = await asyncio.wait_for(roundtrip(port, ApiKey.PRODUCE, {
            "acks": 1, "timeout_ms": 1000, "topics": [
                {"topic": "t", "partitions": [{"partition": 0, "records": batch([b"x"])}]}]}),
            5)
        assert produced["topics"][0]["partitions"][0]["base_offset"] == i


async def test_serve_stops_on_its_trigger_and_leaves_clean_logs(tmp_path):
    data_dir = tmp_path / "data"
    config = BrokerConfig(data_dir=str(data_dir), listen="127.0.0.1:0")
    stop = asyncio.Event()
    ready = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(serve(config, shutdown_trigger=stop.wait(),
                                       ready=lambda host, port: ready.set_result(port)))
    port = await asyncio.wait_for(ready, 10)
    created = await roundtrip(port, ApiKey.CREATE_TOPICS, {"topics": [
        {"topic": "t", "partitions": 1, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    assert created["topics"][0]["error_code"] == 0
    produced = await roundtrip(port, ApiKey.PRODUCE, {"acks": -1, "timeout_ms": 1000, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "records": batch([b"x"])}]}]})
    assert produced["topics"][0]["partitions"][0]["error_code"] == 0
    stop.set()
    await asyncio.wait_for(server, 10)
    assert (data_dir / "t-0" / "clean-shutdown").exists()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", port)


async def test_a_long_poll_in_flight_does_not_hold_up_shutdown(tmp_path):
    config = BrokerConfig(data_dir=str(tmp_path / "data"), listen="127.0.0.1:0")
    stop = asyncio.Event()
    ready = asyncio.get_running_loop().create_future()
    server = asyncio.create_task(serve(config, shutdown_trigger=stop.wait(),
                                       ready=lambda host, port: ready.set_result(port)))
    port = await asyncio.wait_for(ready, 10)
    await roundtrip(port, ApiKey.CREATE_TOPICS, {"topics": [
        {"topic": "t", "partitions": 1, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    poll = asyncio.create_task(roundtrip(port, ApiKey.FETCH, {
        "replica_id": -1, "max_wait_ms": 20_000, "min_bytes": 1, "max_bytes": 1000,
        "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "fetch_offset": 0, "max_bytes": 1000}]}]}))
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    stop.set()
    await asyncio.wait_for(server, 10)
    assert loop.time() - started < 5
    answered = await asyncio.wait_for(poll, 5)  # answered (empty), not cut off
    assert answered["topics"][0]["partitions"][0]["records"] == b""


async def test_requests_are_served_while_a_retention_pass_runs(tmp_path, monkeypatch):
    """Retention (unlinks, closes, a checkpoint with two fsyncs) runs in a worker thread: a
    pass held up by a slow disk must not hold up produce or fetch on any connection."""
    from tslog.broker.storage import PartitionLog

    entered, release = threading.Event(), threading.Event()
    monkeypatch.setattr(PartitionLog, "delete_old_segments",
                        stalling(PartitionLog.delete_old_segments, entered, release))
    config = BrokerConfig(data_dir=str(tmp_path / "data"), listen="127.0.0.1:0",
                          log_retention_check_interval_ms=50)
    async with stuck_disk_broker(config, release) as port:
        await roundtrip(port, ApiKey.CREATE_TOPICS, {"topics": [
            {"topic": "t", "partitions": 1, "replication_factor": 1, "configs": {}}],
            "timeout_ms": 1000})
        assert await asyncio.to_thread(entered.wait, 10)  # a retention pass is stuck on disk
        await three_produces_answered_in_time(port)
        fetched = await asyncio.wait_for(roundtrip(port, ApiKey.FETCH, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": 1 << 20}]}]}), 5)
        assert fetched["topics"][0]["partitions"][0]["high_watermark"] == 3
        assert not release.is_set()  # all of it answered while the pass was still stuck


@pytest.mark.parametrize("api", ["create", "delete", "alter"])
async def test_topic_changes_on_a_slow_disk_do_not_hold_up_other_clients(tmp_path,
                                                                        monkeypatch, api):
    """A topic's record and logs are written with fsyncs (about 1 ms a partition here,
    far more on a busy disk): produces to an existing topic are answered while a
    CreateTopics, DeleteTopics or AlterConfigs waits on the disk, and it then succeeds."""
    from tslog.broker.metadata import LocalMetadataStore

    entered, release = threading.Event(), threading.Event()
    config = BrokerConfig(data_dir=str(tmp_path / "data"), listen="127.0.0.1:0")
    async with stuck_disk_broker(config, release) as port:
        for topic in ("t", "other"):
            await roundtrip(port, ApiKey.CREATE_TOPICS, {"topics": [
                {"topic": topic, "partitions": 1, "replication_factor": 1, "configs": {}}],
                "timeout_ms": 1000})
        for method in ("put_topic", "delete_topic"):
            monkeypatch.setattr(LocalMetadataStore, method, stalling(
                getattr(LocalMetadataStore, method), entered, release))
        change = asyncio.create_task(roundtrip(port, *{
            "create": (ApiKey.CREATE_TOPICS, {"topics": [{"topic": "new", "partitions": 4,
                       "replication_factor": 1, "configs": {}}], "timeout_ms": 1000}),
            "delete": (ApiKey.DELETE_TOPICS, {"topics": ["other"], "timeout_ms": 1000}),
            "alter": (ApiKey.ALTER_CONFIGS, {"resources": [{"type": "topic", "name": "other",
                      "configs": {"retention.ms": "60000"}}], "validate_only": False}),
        }[api]))
        assert await asyncio.to_thread(entered.wait, 10)  # the change is stuck on the disk
        await three_produces_answered_in_time(port)
        assert not change.done() and not release.is_set()
        release.set()
        answer = await asyncio.wait_for(change, 10)
        codes = [entry["error_code"] for entry in answer.get("topics", answer.get("resources"))]
        assert codes == [0]
        metadata = await roundtrip(port, ApiKey.METADATA, {"topics": None})
        names = sorted(t["topic"] for t in metadata["topics"])
        assert names == {"create": ["new", "other", "t"], "delete": ["t"],
                         "alter": ["other", "t"]}[api]
