"""The client's Connection against a real broker: pipelining, limits, timeouts, closing.

Goal: many requests in flight on one socket come back to the right callers; a request that
gets no answer in time fails with RequestTimedOutError and takes the connection down (a late
answer must never be matched to the next request); closing fails everything pending with
ConnectionLostError; acks=0 never waits. Method: ``Connection`` directly, real broker.
"""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from tslog.client import Producer
from tslog.client._connection import Connection
from tslog.client.errors import (
    ConnectionLostError,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch


async def open_connection(broker, **options) -> Connection:
    return await Connection.open(broker.host, broker.port, client_id="conn-test", **options)


def create_topic_body(name: str) -> dict:
    return {"topics": [{"topic": name, "partitions": 1, "replication_factor": 1,
                        "configs": {}}], "timeout_ms": 5000}


def fetch_body(topic: str, offset: int, max_wait_ms: int) -> dict:
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": offset, "max_bytes": 1 << 20}]}]}


async def test_pipelined_requests_are_matched_in_order(broker):
    conn = await open_connection(broker, max_in_flight=1000)
    try:
        futures = [conn.send_nowait(ApiKey.METADATA if i % 2 else ApiKey.API_VERSIONS,
                                    {"topics": None} if i % 2 else {}, timeout_ms=10_000)
                   for i in range(500)]
        assert conn.in_flight == 500
        bodies = await asyncio.gather(*futures)
        assert all(("brokers" in body) == bool(i % 2) for i, body in enumerate(bodies))
        assert conn.in_flight == 0
    finally:
        conn.close()


async def test_max_in_flight_is_respected(broker):
    conn = await open_connection(broker, max_in_flight=3)
    try:
        seen = []

        async def one():
            await conn.send(ApiKey.API_VERSIONS, {})
            seen.append(conn.in_flight)

        tasks = [asyncio.ensure_future(one()) for _ in range(20)]
        await asyncio.sleep(0)
        assert conn.in_flight == 3 and not conn.has_capacity()
        await asyncio.gather(*tasks)
        assert max(seen) <= 3 and len(seen) == 20
    finally:
        conn.close()


async def test_timeout_fails_the_request_and_closes_the_connection(broker):
    conn = await open_connection(broker)
    await conn.send(ApiKey.CREATE_TOPICS, create_topic_body("quiet"))
    slow = conn.send_nowait(ApiKey.FETCH, fetch_body("quiet", 0, 5000), timeout_ms=100)
    behind = conn.send_nowait(ApiKey.API_VERSIONS, {}, timeout_ms=10_000)
    with pytest.raises(RequestTimedOutError):
        await slow
    with pytest.raises(ConnectionLostError):
        await behind
    assert conn.closed
    with pytest.raises(ConnectionLostError):
        await conn.send(ApiKey.API_VERSIONS, {})


async def test_close_fails_pending_requests(broker):
    conn = await open_connection(broker)
    await conn.send(ApiKey.CREATE_TOPICS, create_topic_body("idle"))
    waiting = conn.send_nowait(ApiKey.FETCH, fetch_body("idle", 0, 10_000), timeout_ms=20_000)
    await asyncio.sleep(0.05)
    conn.close()
    with pytest.raises(ConnectionLostError):
        await waiting


async def test_acks_zero_does_not_wait_and_the_data_arrives(broker):
    conn = await open_connection(broker)
    try:
        await conn.send(ApiKey.CREATE_TOPICS, create_topic_body("fire"))
        body = {"acks": 0, "timeout_ms": 1000, "topics": [{"topic": "fire", "partitions": [
            {"partition": 0, "records": build_batch([b"a", b"b"])}]}]}
        assert await conn.send(ApiKey.PRODUCE, body) is None  # acks = 0: no response
        assert conn.in_flight == 0
        reply = await conn.send(ApiKey.FETCH, fetch_body("fire", 0, 2000))
        assert reply["topics"][0]["partitions"][0]["high_watermark"] == 2
    finally:
        conn.close()


async def test_top_level_error_body_raises_its_exception(broker):
    conn = await open_connection(broker)
    try:
        future = conn.send_nowait(ApiKey.METADATA, {"topics": None}, timeout_ms=5000,
                                  api_version=7)
        with pytest.raises(UnsupportedVersionError):
            await future
        assert not conn.closed  # the broker keeps the connection; so do we
        assert "brokers" in await conn.send(ApiKey.METADATA, {"topics": None})
    finally:
        conn.close()


async def test_connect_to_a_closed_port_is_connection_lost(broker):
    broker.kill()
    with pytest.raises(ConnectionLostError):
        await open_connection(broker)


def test_unclosed_sync_client_warns_and_close_is_idempotent(broker):
    producer = Producer(broker.bootstrap)
    producer.close()
    producer.close()
    leaked = Producer(broker.bootstrap)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del leaked
        gc.collect()
    assert any(issubclass(w.category, ResourceWarning) for w in caught)
