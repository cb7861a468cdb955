"""What a console page costs in Python work as the topic grows: the topic page (its table,
its chart of every partition, 64 partitions' own charts) and find by time in every partition
run a bounded number of Python lines per partition, none per (partition, bucket edge).

Method: the console's app in this process, against a real broker holding a topic of 96 and
one of 288 partitions with a record in each; each page is asked once to warm the client's
connection and metadata, then once more while a trace function counts the lines of the
client and the console run (lines, not calls: a loop over every edge of every partition is
one call; the protocol's codecs are not counted, see ``_lines_run``). The difference
between the two topics, divided by the 192 partitions between them, is the cost of one more
partition (the fixed costs cancel out)."""

from __future__ import annotations

import asyncio
import gc
import secrets
import sys
from pathlib import Path

import pytest

import tslog.client
from tests.helpers.broker_process import BrokerProcess
from tslog.client import Admin, Producer
from tslog.client.aio import AsyncAdmin
from tslog.client.console.app import Console, Options, build_app
from tslog.client.console.collector import tune_for_pages

pytestmark = [pytest.mark.console, pytest.mark.timeout(300)]

SIZES = {"narrow": 96, "wide": 288}
PER_PARTITION = {"topic": 250, "find": 300}  # lines of the client and console


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("costs") / "broker").start()
    try:
        with Admin(broker.bootstrap) as admin:
            for topic, partitions in SIZES.items():
                admin.create_topic(topic, partitions=partitions, exist_ok=True)
        with Producer(broker.bootstrap, linger_ms=5) as producer:
            futures = [producer.send(topic, b"x", partition=p)
                       for topic, partitions in SIZES.items() for p in range(partitions)]
            producer.flush()
            for future in futures:
                future.get(60)
        yield broker
    finally:
        broker.stop()


async def _get(app, path: str) -> int:
    raw, _, query = path.partition("?")
    scope = {"type": "http", "method": "GET", "path": raw, "raw_path": raw.encode(),
             "query_string": query.encode(), "headers": [], "http_version": "1.1",
             "scheme": "http", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1),
             "root_path": "", "app": app}
    statuses = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0]


def _console_app(bootstrap: str) -> tuple:
    """(the console's app, its admin), as ``tslog console`` builds them, in this process."""
    options = Options(bootstrap)
    app = build_app(options)
    admin = AsyncAdmin(bootstrap, client_id="costs")
    app.state.console = Console(options, admin, secrets.token_bytes(32))
    return app, admin


def _calls_per_page(bootstrap: str, pattern: str) -> dict:
    """{topic: Python calls of the page ``pattern.format(topic)``, asked warm}."""
    loop = asyncio.new_event_loop()
    app, admin = _console_app(bootstrap)
    counted = {}
    try:
        for topic in SIZES:
            path = pattern.format(topic)
            assert loop.run_until_complete(_get(app, path)) == 200
            lines, status = _lines_run(lambda: loop.run_until_complete(_get(app, path)))
            assert status == 200
            counted[topic] = lines
    finally:
        loop.run_until_complete(admin.close())
        loop.close()
    return counted


_CLIENT = str(Path(tslog.client.__file__).parent)  # the client and its console


def _lines_run(run) -> tuple[int, object]:
    """(Python lines of the client and the console that ``run()`` ran, its result); the
    collector off, as ``calls_by_name``. Not counted: the protocol's codecs (a response's
    schema check walks its lists, a few lines per item, wherever it is decoded), the web
    framework and asyncio."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            return trace
        return trace if frame.f_code.co_filename.startswith(_CLIENT) else None

    gc.collect()
    gc.disable()
    sys.settrace(trace)
    try:
        result = run()
    finally:
        sys.settrace(None)
        gc.enable()
    return count, result


def _per_partition(counted: dict) -> float:
    return (counted["wide"] - counted["narrow"]) / (SIZES["wide"] - SIZES["narrow"])


@pytest.mark.parametrize("window", ["bucket=minute&from=-1h", "bucket=second&from=-20m"])
def test_the_topic_page_costs_calls_per_partition_not_per_bucket(broker, window):
    """61 and 1,201 bucket edges: the cost of a partition does not grow with them."""
    counted = _calls_per_page(broker.bootstrap, "/topics/{}?" + window)
    assert _per_partition(counted) <= PER_PARTITION["topic"], counted


def test_find_by_time_costs_calls_per_partition(broker):
    counted = _calls_per_page(broker.bootstrap, "/find?topic={}&time=-1h")
    assert _per_partition(counted) <= PER_PARTITION["find"], counted


def _collections_per_page(bootstrap: str, path: str) -> dict:
    """{generation: collections} while the console's app renders ``path`` once, warm."""
    loop = asyncio.new_event_loop()
    app, admin = _console_app(bootstrap)
    counted = {0: 0, 1: 0, 2: 0}

    def count(phase, info):
        if phase == "start":
            counted[info["generation"]] += 1
    try:
        assert loop.run_until_complete(_get(app, path)) == 200
        tune_for_pages()
        gc.callbacks.append(count)
        try:
            assert loop.run_until_complete(_get(app, path)) == 200
        finally:
            gc.callbacks.remove(count)
    finally:
        gc.unfreeze()
        gc.set_threshold(*DEFAULT_THRESHOLDS)
        loop.run_until_complete(admin.close())
        loop.close()
    return counted


DEFAULT_THRESHOLDS = gc.get_threshold()


@pytest.mark.parametrize("path", ["/topics/wide", "/find?topic=wide&time=-1h"])
def test_a_page_of_hundreds_of_partitions_runs_few_collections(broker, path):
    """``tslog console`` sets the collector up for pages (``collector.py``): at Python's
    defaults a page of 288 partitions ran about ten collections, an older generation among
    them; now at most two young ones, and none that walks what start-up made."""
    counted = _collections_per_page(broker.bootstrap, path)
    assert counted[0] + counted[1] <= 2 and counted[2] == 0, counted


def test_a_find_in_shares_shows_what_one_request_each_would(broker, monkeypatch):
    """Find at a moment asks ``SHARE_PARTITIONS`` partitions per ListOffsets and Fetch, the
    shares in flight together: the page of 288 partitions (three shares) holds exactly what
    one share of all of them gives, a record from every partition."""
    from tslog.client.console import records

    async def page(share: int):
        monkeypatch.setattr(records, "SHARE_PARTITIONS", share)
        async with AsyncAdmin(broker.bootstrap) as admin:
            return await records.page_at(admin, "wide", list(range(SIZES["wide"])),
                                         0, 1)

    shared, whole = asyncio.run(page(100)), asyncio.run(page(1000))
    assert shared == whole
    assert sorted(shared.records) == list(range(SIZES["wide"]))
    assert all(len(found) == 1 and found[0].partition == p
               for p, found in shared.records.items())
