"""Fixtures of the console's end-to-end tests: one real broker with known data per module,
consoles in front of it (read-only, and with write actions), and headless Chromium.

The data is made so an oracle can be computed from what the broker acknowledged:
- ``events`` (3 partitions): rounds of records sent about 150 ms apart for a bit over two
  seconds, so their LogAppendTimes fall into several second buckets; every record's
  ``RecordMetadata`` (offset, LogAppendTime) is kept.
- ``created`` (2 partitions): records with CreateTimes given by the test, 20 s apart, so a
  per-minute chart by CreateTime has a known count in every bucket.

Set ``TSLOG_CONSOLE_SCREENSHOTS=DIR`` to have the page test save a PNG of each page there
(docs/console.md's pictures are made this way).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.console_process import BrowserPage, ConsoleProcess, launch_chromium
from tslog.client import Admin, Producer

ROUNDS_SPREAD_S = 2.2
CREATED_STEP_MS = 20_000
CREATED_RECORDS = 12


@dataclass
class ClusterData:
    broker: BrokerProcess
    events: list  # RecordMetadata of every record of 'events', in send order
    keys: dict  # (partition, offset) -> key of every record of 'events'
    created: list  # (partition, offset, create_time) of every record of 'created'
    metrics_url: str  # the broker's /metrics


def _produce_events(bootstrap: str) -> tuple[list, dict]:
    metas, keys = [], {}
    with Producer(bootstrap, linger_ms=0) as producer:
        start = time.monotonic()
        round_number = 0
        while time.monotonic() - start < ROUNDS_SPREAD_S:
            for i in range(1 + round_number % 4):
                key = f"k{round_number}-{i}".encode()
                future = producer.send("events", f'{{"round": {round_number}, "i": {i}}}'
                                       .encode(), key=key, partition=i % 3,
                                       headers=[("source", b"test")])
                metas.append(future.get(10))
                keys[metas[-1].partition, metas[-1].offset] = key
            round_number += 1
            time.sleep(0.15)  # spreads LogAppendTimes over several second buckets
    return metas, keys


def _produce_created(bootstrap: str) -> list:
    base = (time.time_ns() // 1_000_000 // 60_000 - 10) * 60_000  # ten minutes ago, whole
    sent = []
    with Producer(bootstrap, linger_ms=0) as producer:
        for i in range(CREATED_RECORDS):
            for partition in (0, 1):
                create_ms = base + i * CREATED_STEP_MS + partition
                meta = producer.send("created", f"c{i}".encode(), partition=partition,
                                     timestamp_ms=create_ms).get(10)
                sent.append((partition, meta.offset, create_ms))
    return sent


@pytest.fixture(scope="module")
def cluster_data(tmp_path_factory):
    metrics = f"127.0.0.1:{free_port()}"
    broker = BrokerProcess(tmp_path_factory.mktemp("console") / "broker",
                           config={"metrics_listen": metrics}).start()
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic("events", partitions=3)
            admin.create_topic("created", partitions=2)
        yield ClusterData(broker, *_produce_events(broker.bootstrap),
                          _produce_created(broker.bootstrap), f"http://{metrics}/metrics")
    finally:
        broker.cleanup()


@pytest.fixture(scope="module")
def console(cluster_data, tmp_path_factory):
    process = ConsoleProcess(cluster_data.broker.bootstrap, tmp_path_factory.mktemp("logs"),
                             "--metrics", f"0={cluster_data.metrics_url}")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def writable_console(cluster_data, tmp_path_factory):
    process = ConsoleProcess(cluster_data.broker.bootstrap, tmp_path_factory.mktemp("logs"),
                             "--allow-writes")
    yield process
    process.stop()


@pytest.fixture(scope="module")
def chromium():
    """Module-scoped, not session: Playwright's sync API keeps an event loop running on this
    thread while it is open, and the tests after the console's call ``asyncio.run``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium):
    """``browser_page(console)`` -> a BrowserPage on that console, closed at teardown."""
    opened = []

    def make(process: ConsoleProcess, credentials=None) -> BrowserPage:
        opened.append(BrowserPage(chromium, process.url, credentials or process.auth))
        return opened[-1]

    yield make
    for page in opened:
        page.close()
