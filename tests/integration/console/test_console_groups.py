"""Consumer groups in the console (real Chromium, real broker): lag in seconds is the age of
the oldest unconsumed record; a reset to a moment shows the plan the acknowledged records
give (per partition the first offset whose LogAppendTime is at or after the moment) and then
commits exactly that plan,
even when records arrive between the confirmation and the click; a read-only console refuses
both steps, and a form it did not make is refused. Protected mode: beyond loopback the
console will not start without a users file, and with one it asks every request to log in.

Lag in seconds depends on "now", so it is checked between two readings of the clock taken
before and after the page loaded, never against a fixed figure."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.broker_process import free_port
from tests.helpers.group_wire import heartbeat
from tests.helpers.wire import Wire
from tests.helpers.console_process import ConsoleProcess
from tslog.client import Admin, Producer, TopicPartition
from tslog.client.times import format_time_ms

pytestmark = [pytest.mark.console, pytest.mark.timeout(240)]


def _rows(page, table_id: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.trim()))")


def _commit(bootstrap: str, group: str, offsets: dict) -> None:
    with Admin(bootstrap) as admin:
        admin.alter_consumer_group_offsets(
            group, {TopicPartition("events", p): o for p, o in offsets.items()})


def _committed(bootstrap: str, group: str) -> dict:
    with Admin(bootstrap) as admin:
        return {tp.partition: meta.offset
                for tp, meta in admin.list_consumer_group_offsets(group).items()}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def test_lag_in_seconds_is_the_age_of_the_oldest_unconsumed_record(console, cluster_data,
                                                                    browser_page):
    metas = cluster_data.events
    ends = {p: 1 + max(m.offset for m in metas if m.partition == p) for p in (0, 1, 2)}
    _commit(cluster_data.broker.bootstrap, "lagging", {0: 1, 1: 2, 2: ends[2]})
    before = _now_ms()
    page = browser_page(console).open("/groups/lagging")
    after = _now_ms()
    rows = {int(row[1]): row for row in _rows(page, "lag")}
    for partition, committed in ((0, 1), (1, 2)):
        oldest = next(m.log_append_time for m in metas
                      if m.partition == partition and m.offset == committed)
        row = rows[partition]
        assert row[2:5] == [str(committed), str(ends[partition]),
                            str(ends[partition] - committed)]
        assert (before - oldest) / 1000 - 0.001 <= float(row[5]) <= (after - oldest) / 1000
    assert rows[2][4:6] == ["0", "0.0"]  # caught up


def _requests_by_api(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {sample.labels["api"]: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == "tslog_requests_total"}


def test_the_group_page_reads_lag_times_with_one_fetch(console, cluster_data):
    """The guard of the group page's cost: every lagging partition's oldest unread time
    comes from one Fetch (batch headers), whatever the number of lagging partitions."""
    _commit(cluster_data.broker.bootstrap, "counted", {0: 0, 1: 0, 2: 0})
    before = _requests_by_api(cluster_data.metrics_url)
    status, body = console.get("/groups/counted")
    after = _requests_by_api(cluster_data.metrics_url)
    assert status == 200 and 'id="lag"' in body
    grew = {api: after[api] - before.get(api, 0) for api in after
            if after[api] != before.get(api, 0)}
    assert grew.get("fetch") == 1
    assert grew.get("list_offsets") == 2  # log start and log end


def test_a_live_member_shows_its_host_and_client_id_and_a_reset_is_refused(
        writable_console, cluster_data, browser_page):
    broker = cluster_data.broker
    with Wire(broker.host, broker.port, client_id="billing-reader-7") as wire:
        member_id = heartbeat(wire, "live", "", 0, ["events"])["member_id"]
        try:
            page = browser_page(writable_console).open("/groups/live")
            (row,) = _rows(page, "members")
            assert row[:3] == [member_id, "127.0.0.1", "billing-reader-7"]
            status, body = writable_console.get("/groups/live/reset?topic=events&to=earliest")
            assert status == 502 and "live members" in body  # as the CLI refuses
        finally:
            heartbeat(wire, "live", member_id, -1)  # leaves


def _plan_oracle(bootstrap: str, metas, moment_ms: int) -> dict:
    """Per partition the first offset whose LogAppendTime is >= the moment, else the log end."""
    with Admin(bootstrap) as admin:
        ends = admin.list_offsets({TopicPartition("events", p): -1 for p in (0, 1, 2)})
    return {p: min((m.offset for m in metas if m.partition == p
                    and m.log_append_time >= moment_ms),
                   default=ends[TopicPartition("events", p)].offset) for p in (0, 1, 2)}


def test_reset_to_a_moment_commits_exactly_the_confirmed_plan(writable_console, cluster_data,
                                                              browser_page):
    bootstrap = cluster_data.broker.bootstrap
    metas = cluster_data.events
    _commit(bootstrap, "replay", {0: 0, 1: 0, 2: 0})
    moment_ms = sorted(m.log_append_time for m in metas)[len(metas) // 3]
    moment = format_time_ms(moment_ms)
    browser = browser_page(writable_console)
    page = browser.open("/groups/replay")
    page.select_option("select[name=topic]", "events")
    page.fill("input[name=to]", moment)
    page.click("text=Show what would change")
    page.wait_for_url("**/reset?**")
    assert browser.errors == []
    plan = {int(p): (current, int(new)) for p, current, new, _ in _rows(page, "plan")}
    assert {p: new for p, (_, new) in plan.items()} == _plan_oracle(bootstrap, metas, moment_ms)
    assert {p: current for p, (current, _) in plan.items()} == {0: "0", 1: "0", 2: "0"}
    assert _committed(bootstrap, "replay") == {0: 0, 1: 0, 2: 0}  # nothing changed yet
    page.click("#apply")
    page.wait_for_selector("#applied")
    assert browser.errors == []
    assert _committed(bootstrap, "replay") == {p: new for p, (_, new) in plan.items()}


def test_reset_to_latest_applies_the_confirmed_ends_not_later_ones(writable_console,
                                                                   cluster_data, browser_page):
    bootstrap = cluster_data.broker.bootstrap
    _commit(bootstrap, "to-latest", {0: 0, 1: 0, 2: 0})
    browser = browser_page(writable_console)
    page = browser.open("/groups/to-latest/reset?topic=events&to=latest")
    plan = {int(p): int(new) for p, _, new, _ in _rows(page, "plan")}
    with Producer(bootstrap, linger_ms=0) as producer:
        producer.send("events", b"after the confirmation", partition=0).get(10)
    page.click("#apply")
    page.wait_for_selector("#applied")
    assert _committed(bootstrap, "to-latest") == plan


def test_a_read_only_console_refuses_resets_and_forged_forms_are_refused(
        console, writable_console, cluster_data):
    status, body = console.get("/groups/replay/reset?topic=events&to=earliest")
    assert status == 403 and "--allow-writes" in body
    assert console.post("/groups/replay/reset", b"topic=events&offsets=0:0")[0] == 403
    _commit(cluster_data.broker.bootstrap, "forged", {0: 1, 1: 1, 2: 1})
    status, body = writable_console.post("/groups/forged/reset",
                                         b"topic=events&offsets=0:0,1:0,2:0&signature=00")
    assert status == 403
    assert _committed(cluster_data.broker.bootstrap, "forged") == {0: 1, 1: 1, 2: 1}


def test_beyond_loopback_the_console_needs_a_users_file(cluster_data, tmp_path, browser_page):
    bootstrap = cluster_data.broker.bootstrap
    result = subprocess.run(
        [sys.executable, "-m", "tslog.client.cli", "console", "--bootstrap", bootstrap,
         "--listen", f"0.0.0.0:{free_port()}"], capture_output=True, timeout=60)
    assert result.returncode == 1
    (line,) = result.stderr.decode().strip().splitlines()
    assert line.startswith("tslog: error: refusing to serve on 0.0.0.0 without authentication")
    password = "correct horse battery staple"
    hashed = subprocess.run([sys.executable, "-m", "tslog.client.cli", "console",
                             "--hash-password", "ops"], input=password + "\n", text=True,
                            capture_output=True, timeout=60, check=True).stdout.strip()
    assert password not in hashed
    users = tmp_path / "console-users"
    users.write_text(f"{hashed}\n")
    process = ConsoleProcess(bootstrap, tmp_path, "--users", str(users), host="0.0.0.0",
                             auth=("ops", password))
    try:
        assert process.get("/", headers={})[0] == 401
        assert process.get("/", headers={"Authorization": "Basic b3BzOndyb25n"})[0] == 401
        browser = browser_page(process)
        for path in ("/", "/topics", "/groups"):
            assert password not in browser.open(path).content()
        assert password not in process.log_text()
    finally:
        process.stop()
