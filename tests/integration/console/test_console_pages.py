"""The console in real headless Chromium against a real broker: every page loads without
errors; find by time shows exactly the records an oracle computes from what the broker
acknowledged, pages forward and back without skipping, and finds by offset; the traffic
chart's bars count exactly the records appended (LogAppendTime) or created (CreateTime) in
each bucket, and a click on a bar finds the records of its bucket.

The oracle of "records at moment T" is the definition itself: per partition, the records
whose LogAppendTime is >= T, in offset order, the first ``limit`` of them."""

from __future__ import annotations

import collections
import os
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tslog.client import Admin, TopicPartition
from tslog.client.times import format_time_ms

pytestmark = [pytest.mark.console, pytest.mark.timeout(240)]

PAGES = {
    "cluster": "/",
    "topics": "/topics",
    "topic": "/topics/events?bucket=second&from=-2m",
    "find": "/find?topic=events&time=-2m&limit=3&format=json",
    "groups": "/groups",
}


def _screenshot(page, name: str) -> None:
    folder = os.environ.get("TSLOG_CONSOLE_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def _rows(page, table_id: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.trim()))")


def _bars(page, selector: str) -> dict[int, int]:
    pairs = page.eval_on_selector_all(
        f"{selector} rect.bar", "bars => bars.map(b => [b.dataset.start, b.dataset.count])")
    return {int(start): int(count) for start, count in pairs}


def _expected_at(metas, moment_ms: int, limit: int, partitions=(0, 1, 2)) -> list:
    """[(partition, offset)] the page must show: per partition the first ``limit`` records
    with LogAppendTime >= moment, partitions in order."""
    rows = []
    for partition in partitions:
        later = sorted(m.offset for m in metas
                       if m.partition == partition and m.log_append_time >= moment_ms)
        rows += [(partition, offset) for offset in later[:limit]]
    return rows


def _shown(page) -> list:
    return [(int(row[0]), int(row[1])) for row in _rows(page, "records")]


def test_every_page_loads_without_errors(console, writable_console, cluster_data,
                                         browser_page):
    browser = browser_page(console)
    for name, path in PAGES.items():
        page = browser.open(path)
        assert page.locator("h1").count() == 1
        if name == "find":
            assert _rows(page, "records"), "the find page found nothing"
        _screenshot(page, name)
    cluster = browser.open("/")
    (broker_row,) = _rows(cluster, "brokers")
    assert broker_row[:3] == ["0", cluster_data.broker.bootstrap, "yes"]
    with Admin(cluster_data.broker.bootstrap) as admin:
        admin.alter_consumer_group_offsets(
            "dashboard", {TopicPartition("events", p): 1 for p in range(3)})
    writer = browser_page(writable_console)
    for name, path in (("group", "/groups/dashboard"),
                       ("reset", "/groups/dashboard/reset?topic=events&to=-1h")):
        page = writer.open(path)
        _screenshot(page, name)


def test_topic_page_shows_offsets_times_and_configs(console, cluster_data, browser_page):
    page = browser_page(console).open("/topics/events?bucket=second&from=-5m")
    by_partition = collections.defaultdict(list)
    for meta in cluster_data.events:
        by_partition[meta.partition].append(meta)
    rows = _rows(page, "partitions")
    assert [row[0] for row in rows] == ["0", "1", "2"]
    sizes = _sizes_from_metrics(cluster_data.metrics_url, "events")
    for row in rows:
        metas = by_partition[int(row[0])]
        assert row[4:7] == ["0", str(len(metas)), str(len(metas))]
        assert int(row[7]) == sizes[int(row[0])] > 0
        assert row[8] == format_time_ms(min(m.log_append_time for m in metas))
        assert row[9] == format_time_ms(max(m.log_append_time for m in metas))
    configs = {row[0]: row[1] for row in _rows(page, "configs")}
    assert "retention.ms" in configs


def _sizes_from_metrics(url: str, topic: str) -> dict[int, int]:
    """The oracle of the bytes column: prometheus_client's own parser on the broker's
    /metrics."""
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {int(sample.labels["partition"]): int(sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "tslog_log_size_bytes" and sample.labels["topic"] == topic}


def test_find_by_time_shows_exactly_the_records_at_that_moment(console, cluster_data,
                                                                browser_page):
    metas = cluster_data.events
    moment = sorted(m.log_append_time for m in metas)[len(metas) // 2]
    browser = browser_page(console)
    page = browser.open(f"/find?topic=events&time={format_time_ms(moment)}&limit=2")
    assert _shown(page) == _expected_at(metas, moment, 2)
    # later: the next two per partition, exactly after the last shown
    first_page = _shown(page)
    page.click("#paging >> text=later →")
    assert browser.errors == []
    later = _shown(page)
    for partition in (0, 1, 2):
        shown = [o for p, o in first_page if p == partition]
        if shown:
            expected = [o for p, o in later if p == partition]
            offsets = sorted(m.offset for m in metas if m.partition == partition)
            start = offsets.index(shown[-1]) + 1
            assert expected == offsets[start:start + 2]
    page.click("#paging >> text=← earlier")
    assert _shown(page) == first_page


def test_find_by_offset_and_value_formats(console, cluster_data, browser_page):
    meta = next(m for m in cluster_data.events if m.partition == 1 and m.offset == 3)
    page = browser_page(console).open("/find?topic=events&partition=1&offset=3&limit=1&format=hex")
    (row,) = _rows(page, "records")
    assert row[:4] == ["1", "3", format_time_ms(meta.log_append_time),
                       format_time_ms(meta.create_time)]
    assert row[4] == cluster_data.keys[1, 3].hex(" ")
    assert row[6] == "source=74 65 73 74"


def test_traffic_chart_counts_the_records_of_every_second(console, cluster_data, browser_page):
    metas = cluster_data.events
    first = min(m.log_append_time for m in metas)
    last = max(m.log_append_time for m in metas)
    expected = collections.Counter(m.log_append_time // 1000 * 1000 for m in metas)
    assert len(expected) >= 2, "the records did not spread over two seconds"
    page = browser_page(console).open(
        f"/topics/events?bucket=second&from={first}&to={last}")
    bars = _bars(page, "#traffic")
    assert bars == {start: expected.get(start, 0) for start in bars}
    assert sum(bars.values()) == len(metas)
    for partition in (0, 1, 2):
        own = collections.Counter(m.log_append_time // 1000 * 1000 for m in metas
                                  if m.partition == partition)
        charted = _bars(page, f'svg[aria-label$="partition {partition}"]')
        assert charted == {start: own.get(start, 0) for start in charted}


def test_a_click_on_a_bar_finds_the_records_of_its_bucket(console, cluster_data,
                                                          browser_page):
    metas = cluster_data.events
    first = min(m.log_append_time for m in metas)
    last = max(m.log_append_time for m in metas)
    browser = browser_page(console)
    page = browser.open(f"/topics/events?bucket=second&from={first}&to={last}")
    start, _ = max(_bars(page, "#traffic").items(), key=lambda item: item[1])
    page.click(f'#traffic rect.bar[data-start="{start}"]')
    page.wait_for_url("**/find?**")
    assert browser.errors == []
    assert _shown(page) == _expected_at(metas, start, 10)


def test_traffic_chart_by_create_time_per_minute(console, cluster_data, browser_page):
    sent = cluster_data.created
    expected = collections.Counter(create // 60_000 * 60_000 for _, _, create in sent)
    first, last = min(c for *_, c in sent), max(c for *_, c in sent)
    page = browser_page(console).open(
        f"/topics/created?bucket=minute&time_type=create&from={first}&to={last}")
    bars = _bars(page, "#traffic")
    assert bars == {start: expected.get(start, 0) for start in bars}
    assert sum(bars.values()) == len(sent)


def _requests_by_api(url: str) -> dict[str, float]:
    """{api: requests answered so far} from the broker's own counter."""
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {sample.labels["api"]: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "tslog_requests_total"}


@pytest.mark.parametrize("window,buckets", [
    ("bucket=second&from=-2m", 121), ("bucket=minute&from=-1h", 61),
    ("bucket=hour&from=-24h&time_type=create", 25)])
def test_a_chart_costs_one_lookup_request_whatever_its_bucket_count(console, cluster_data,
                                                                    window, buckets):
    """The guard of the chart's cost: one OffsetsAtTimes for every edge of every partition
    (one leader here), never one request per bucket; the partition table's three ListOffsets
    (latest, first record, max timestamp) do not grow with the chart either."""
    before = _requests_by_api(cluster_data.metrics_url)
    status, body = console.get(f"/topics/events?{window}")
    after = _requests_by_api(cluster_data.metrics_url)
    assert status == 200
    assert body.count('class="bar"') >= buckets  # the whole chart, and per partition
    grew = {api: after[api] - before.get(api, 0) for api in after
            if after[api] != before.get(api, 0)}
    assert grew.get("offsets_at_times") == 1
    assert grew.get("list_offsets") == 3


@pytest.mark.parametrize("topic", ["events", "created"])  # 3 and 2 partitions
def test_find_by_time_costs_the_same_few_requests_whatever_the_partition_count(
        console, cluster_data, topic):
    """The guard of find's cost: one Metadata, one ListOffsets (the moment) and one Fetch,
    for every partition at once; a moment after every record asks the log ends instead of
    reading (a second ListOffsets, no Fetch); by offset, no moment: the log's bounds."""
    def cost(path):
        before = _requests_by_api(cluster_data.metrics_url)
        status, body = console.get(path)
        after = _requests_by_api(cluster_data.metrics_url)
        assert status == 200 and 'id="records"' in body
        return {api: after[api] - before.get(api, 0) for api in after
                if after[api] != before.get(api, 0)}

    assert cost(f"/find?topic={topic}&time=2020-01-01T00:00:00Z&limit=1") == {
        "metadata": 1, "list_offsets": 1, "fetch": 1}
    assert cost(f"/find?topic={topic}&time=2100-01-01T00:00:00Z&limit=1") == {
        "metadata": 1, "list_offsets": 2}
    assert cost(f"/find?topic={topic}&partition=1&offset=0&limit=1") == {
        "metadata": 1, "list_offsets": 2, "fetch": 1}
