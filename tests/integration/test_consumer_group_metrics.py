"""Consumer-group metrics of a real broker, read by scraping its /metrics: how far behind a
group is in seconds (and that this grows while nothing is produced), its state, members,
rebalances and commits, as an operator's dashboard would show them."""

from __future__ import annotations

import urllib.request

import pytest

from tests.helpers.broker_process import free_port
from tests.helpers.prometheus import parse_samples
from tests.helpers.replication import wait_for
from tests.helpers.wire import Wire, batch
from tests.integration.test_consumer_group_commits import codes, commit
from tests.integration.test_consumer_groups_wire import Member, settle

pytestmark = pytest.mark.timeout(60)

SERIES = '{group="readers",partition="0",topic="events"}'


@pytest.fixture
def metrics_broker(broker_factory):
    port = free_port()
    broker = broker_factory(env={"TSLOG_METRICS_LISTEN": f"127.0.0.1:{port}"})
    broker.metrics_port = port
    return broker


def scrape(broker) -> dict[str, float]:
    url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        return parse_samples(response.read().decode())


def test_a_group_behind_inside_one_batch_ages_while_nothing_is_produced(metrics_broker):
    with Wire(metrics_broker.host, metrics_broker.port) as wire:
        assert wire.create_topic("events", 1) == 0
        assert wire.produce("events", 0, batch([b"%d" % i for i in range(5)]))["error_code"] == 0
        assert codes(commit(wire, {("events", 0): 2})) == [0]  # 3 records behind, one batch

        first = wait_for(lambda: scrape(metrics_broker).get(
            "tslog_consumer_group_lag_seconds" + SERIES), 10.0, "a time lag above 0")
        values = scrape(metrics_broker)
        assert values["tslog_consumer_group_lag_records" + SERIES] == 3
        # One batch: every unread record has the same LogAppendTime, so the span is 0 and
        # only the age says the group is behind.
        assert values["tslog_consumer_group_backlog_span_seconds" + SERIES] == 0.0
        wait_for(lambda: scrape(metrics_broker)["tslog_consumer_group_lag_seconds" + SERIES]
                 >= first + 1.0, 10.0, "the time lag growing with nothing produced")
        assert wire.log_end_offset("events") == 5  # nothing was produced meanwhile

        assert codes(commit(wire, {("events", 0): 5})) == [0]  # caught up
        values = scrape(metrics_broker)
        assert values["tslog_consumer_group_lag_seconds" + SERIES] == 0.0
        assert values["tslog_consumer_group_lag_records" + SERIES] == 0
        assert values['tslog_consumer_group_commits_total{group="readers"}'] == 2


def test_state_members_rebalances_and_commits_after_heartbeats(metrics_broker):
    with Wire(metrics_broker.host, metrics_broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        first = Member(wire, ["events"])
        settle(first)
        values = scrape(metrics_broker)
        state = 'tslog_consumer_group_state{group="readers",state="%s"}'
        assert values[state % "stable"] == 1
        assert values[state % "empty"] == values[state % "assigning"] == 0
        assert values[state % "reconciling"] == 0
        assert values['tslog_consumer_group_members{group="readers"}'] == 1
        assert values['tslog_consumer_group_rebalances_total{group="readers"}'] == 1

        second = Member(wire, ["events"])
        values = scrape(metrics_broker)
        assert values['tslog_consumer_group_members{group="readers"}'] == 2
        assert values['tslog_consumer_group_rebalances_total{group="readers"}'] == 2
        assert values[state % "stable"] == 0  # the first member still holds both partitions
        settle(first, second)
        assert codes(commit(wire, {("events", 0): 0}, first.member_id, first.epoch)) == [0]
        assert codes(commit(wire, {("events", 0): 0}, "", -1)) == [25]  # refused: not counted
        values = scrape(metrics_broker)
        assert values[state % "stable"] == 1
        assert values['tslog_consumer_group_commits_total{group="readers"}'] == 1
        assert values['tslog_request_errors_total{api="offset_commit",'
                      'error="unknown_member_id"}'] == 1
