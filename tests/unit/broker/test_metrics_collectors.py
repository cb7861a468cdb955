"""Scrape-time metrics over a real Broker (temporary directory, handlers called directly),
and the /metrics endpoint scraped from another thread while the loop owns the logs."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request

import pytest

from tests.helpers.prometheus import parse_samples
from tests.helpers.wire import batch
from tests.unit.broker.test_handlers import call, create, fetch, produce
from tslog.broker.metrics import MetricsServer
from tslog.broker.metrics.definitions import API
from tslog.broker.metrics.observe import count_errors
from tslog.broker.metrics.server import render
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(30)


def scrape(broker) -> dict[str, float]:
    """One scrape's samples, rendered on the test's own loop (the snapshot is taken there)."""
    return parse_samples(render(broker.scrape_sources, asyncio.get_running_loop()).decode())


async def commit(broker, group, topic, partition, offset):
    body = {"group_id": group, "topics": [{"topic": topic, "partitions": [
        {"partition": partition, "offset": offset, "metadata": ""}]}]}
    response = await call(broker, ApiKey.OFFSET_COMMIT, body)
    assert response["topics"][0]["partitions"][0]["error_code"] == 0


async def produce_at(broker, topic, values, clock_offset_ms):
    broker.clock.offset_ms = clock_offset_ms
    result = await produce(broker, topic, 0, batch(values))
    assert result["error_code"] == 0
    return result


def lag(values, group, topic, partition=0):
    """(records, backlog span in seconds) of a group's lag series."""
    labels = f'{{group="{group}",partition="{partition}",topic="{topic}"}}'
    return (values.get("tslog_consumer_group_lag_records" + labels),
            values.get("tslog_consumer_group_backlog_span_seconds" + labels))


def lag_age(values, group, topic, partition=0):
    labels = f'{{group="{group}",partition="{partition}",topic="{topic}"}}'
    return values.get("tslog_consumer_group_lag_seconds" + labels)


async def test_partition_state_and_group_lag(broker):
    await create(broker, "t")
    first = await produce_at(broker, "t", [b"a", b"b"], 0)
    second = await produce_at(broker, "t", [b"c"], 2_000)
    third = await produce_at(broker, "t", [b"d", b"e", b"f"], 5_500)
    await commit(broker, "behind", "t", 0, 2)    # at the second batch
    await commit(broker, "done", "t", 0, 6)      # at the high watermark
    await commit(broker, "ahead", "t", 0, 50)    # past the end
    await commit(broker, "unset", "t", 0, -1)    # no position: no lag series
    values = scrape(broker)
    key = '{partition="0",topic="t"}'
    assert values["tslog_log_start_offset" + key] == 0
    assert values["tslog_log_end_offset" + key] == 6
    assert values["tslog_high_watermark" + key] == 6
    assert values["tslog_log_segments" + key] == 1
    assert values["tslog_log_size_bytes" + key] == broker.topics.get_log("t", 0).size_bytes
    assert values['tslog_index_bytes{kind="time"}'] > 0
    expected_s = (third["log_append_time"] - second["log_append_time"]) / 1000
    assert expected_s >= 3.0
    assert lag(values, "behind", "t") == (4, expected_s)
    # The record at offset 2 was appended at the second batch's LAT; the clock is now past
    # the third's, so the group's oldest unread record is at least that span old.
    age = (broker.clock.now_ms() - second["log_append_time"]) / 1000
    assert expected_s <= lag_age(values, "behind", "t") <= age
    assert lag(values, "done", "t") == (0, 0.0) and lag_age(values, "done", "t") == 0.0
    assert lag(values, "ahead", "t") == (0, 0.0) and lag_age(values, "ahead", "t") == 0.0
    assert lag(values, "unset", "t") == (None, None) and lag_age(values, "unset", "t") is None
    assert first["base_offset"] == 0


async def test_deleted_topic_leaves_no_series(broker):
    await create(broker, "gone")
    await produce_at(broker, "gone", [b"x"], 0)
    await commit(broker, "g", "gone", 0, 0)
    response = await call(broker, ApiKey.DELETE_TOPICS, {"topics": ["gone"], "timeout_ms": 1000})
    assert response["topics"][0]["error_code"] == 0
    values = scrape(broker)
    assert not [name for name in values if '"gone"' in name], values


async def test_requests_errors_and_produced_records_are_counted(broker):
    await create(broker, "c")

    records = 'tslog_produced_records_total{topic="c"}'
    errors = 'tslog_request_errors_total{api="produce",error="unknown_topic_or_partition"}'
    before = scrape(broker)
    await produce_at(broker, "c", [b"1", b"2", b"3"], 0)
    missing = await produce(broker, "no-such-topic", 0, batch([b"x"]))
    assert missing["error_code"] != 0
    assert scrape(broker)[records] == before.get(records, 0) + 3
    # Handlers called directly are not requests on a connection: hand the response to the
    # walker the connection calls.
    count_errors(API[ApiKey.PRODUCE], {"topics": [{"topic": "no-such-topic",
                                                   "partitions": [missing]}]})
    assert scrape(broker)[errors] == before.get(errors, 0) + 1


async def test_scrape_from_another_thread_sees_the_latest_append(broker):
    loop = asyncio.get_running_loop()
    await create(broker, "s")
    server = MetricsServer(broker.scrape_sources, loop, "127.0.0.1", 0)
    try:
        await produce_at(broker, "s", [b"a", b"b"], 0)
        await produce_at(broker, "s", [b"c"], 1_250)
        await commit(broker, "g", "s", 0, 0)
        url = f"http://127.0.0.1:{server.port}/metrics"
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read())
    finally:
        await asyncio.to_thread(server.stop)
    lines = text.decode().splitlines()
    assert 'tslog_log_end_offset{partition="0",topic="s"} 3.0' in lines
    assert 'tslog_consumer_group_lag_records{group="g",partition="0",topic="s"} 3.0' in lines
    seconds = [line for line in lines if line.startswith("tslog_consumer_group_lag_seconds{")]
    assert len(seconds) == 1 and float(seconds[0].split()[-1]) >= 1.25
    assert any(line.startswith("process_cpu_seconds_total ") for line in lines)


async def test_a_scrape_while_the_loop_is_stuck_answers_without_partition_state(broker):
    """The loop cannot hand over a snapshot in time: the scrape still answers (process and
    counter series), just without the per-partition ones, instead of hanging."""
    loop = asyncio.get_running_loop()
    await create(broker, "busy")
    result: list[bytes] = []
    sources = broker.scrape_sources
    scraper = threading.Thread(target=lambda: result.append(render(sources, loop, timeout_s=0.2)))
    scraper.start()
    time.sleep(0.6)  # the loop is blocked: the snapshot cannot run
    scraper.join(5)
    text = result[0].decode()
    assert "process_cpu_seconds_total " in text and "tslog_requests_total{" in text
    assert "tslog_log_end_offset{" not in text
    await asyncio.sleep(0)  # the late snapshot task runs now and is discarded
    assert 'tslog_log_end_offset{partition="0",topic="busy"} 0.0' in render(sources, loop).decode()


async def test_end_to_end_latency_and_fetched_records(broker):
    """LAT minus the newest CreateTime of a produce, per topic; a consumer's fetch counts the
    records of the batches it was sent."""
    await create(broker, "e2e")
    now = broker.clock.now_ms()
    old = await produce(broker, "e2e", 0, batch([b"a", b"b"], create_time=now - 5_000))
    assert old["error_code"] == 0
    ahead = await produce(broker, "e2e", 0, batch([b"c"], create_time=now + 1_000))
    assert ahead["error_code"] == 0
    values = scrape(broker)
    bucket = 'tslog_end_to_end_latency_seconds_bucket{topic="e2e",le="%s"}'
    assert values['tslog_end_to_end_latency_seconds_count{topic="e2e"}'] == 2
    assert values[bucket % "0.001"] == 1  # a producer clock ahead of the broker counts as 0
    assert values[bucket % "2.5"] == 1 and values[bucket % "10.0"] == 2
    latency = values['tslog_end_to_end_latency_seconds_sum{topic="e2e"}']
    assert latency == (old["log_append_time"] - (now - 5_000)) / 1000
    fetched = await fetch(broker, "e2e", 0, 1)  # the first batch holds offset 1: sent whole
    assert fetched["error_code"] == 0
    values = scrape(broker)
    assert values['tslog_fetched_records_total{topic="e2e"}'] == 3
    assert values['tslog_fetched_bytes_total{topic="e2e"}'] == len(fetched["records"])
