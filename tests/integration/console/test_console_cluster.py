"""The cluster page of a three-broker cluster (etcd, real brokers) in Chromium: every broker,
the controller, leaders and replicas per broker as Metadata says; after a broker is killed,
the partitions whose ISR lost it are listed as under-replicated, as Admin describes them."""

from __future__ import annotations

import time

import pytest

from tests.helpers.console_process import ConsoleProcess
from tslog.client import Admin

pytestmark = [pytest.mark.console, pytest.mark.timeout(240)]


def _rows(page, table_id: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table_id} tbody tr",
        "rows => rows.map(r => Array.from(r.cells).map(c => c.innerText.trim()))")


def _expected(bootstrap: str) -> tuple[dict, int, list]:
    """({node: (leaders, replicas)}, controller, [(topic, partition) under-replicated])."""
    with Admin(bootstrap) as admin:
        brokers, controller = admin.describe_cluster()
        topics = admin.describe_topics()
    counts = {node: [0, 0] for node in brokers}
    under = []
    for name, description in topics.items():
        for info in description.partitions:
            if info.leader in counts:
                counts[info.leader][0] += 1
            for node in info.replicas:
                if node in counts:
                    counts[node][1] += 1
            if len(info.isr) < len(info.replicas):
                under.append((name, info.partition))
    return {node: tuple(c) for node, c in counts.items()}, controller, sorted(under)


def _shown(page) -> tuple[dict, int, list]:
    brokers = _rows(page, "brokers")
    counts = {int(row[0]): (int(row[3]), int(row[4])) for row in brokers}
    (controller,) = [int(row[0]) for row in brokers if row[2] == "yes"]
    under = sorted((row[1], int(row[2])) for row in _rows(page, "unhealthy")
                   if row[0] == "under-replicated")
    return counts, controller, under


def test_the_cluster_page_shows_brokers_leaders_and_under_replicated_partitions(
        cluster_factory, tmp_path, browser_page):
    three = cluster_factory(3)
    bootstrap = ",".join(b.bootstrap for b in three)
    with Admin(bootstrap) as admin:
        admin.create_topic("orders", partitions=3, replication_factor=3)
    console = ConsoleProcess(bootstrap, tmp_path)
    try:
        browser = browser_page(console)
        page = browser.open("/")
        assert _shown(page) == _expected(bootstrap)
        assert len(_rows(page, "brokers")) == 3 and _rows(page, "unhealthy") == []

        controller = _expected(bootstrap)[1]
        victim = next(b for b in three if b.node_id != controller)
        victim.kill()
        # every partition had the victim in its ISR: wait until the leaders dropped it from all
        everywhere = [("orders", p) for p in range(3)]
        survivors = ",".join(b.bootstrap for b in three if b is not victim)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _expected(survivors)[2] != everywhere:
            time.sleep(0.2)
        page = browser.open("/")
        counts, shown_controller, under = _shown(page)
        expected_counts, expected_controller, expected_under = _expected(survivors)
        assert under == expected_under == everywhere
        assert victim.node_id not in counts
        assert (counts, shown_controller) == (expected_counts, expected_controller)
    finally:
        console.stop()
