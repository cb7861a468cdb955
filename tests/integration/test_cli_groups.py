"""`tslog groups` against a real broker: list, describe (lag in records and seconds), delete,
and reset-offsets, whose plan changes nothing until --execute and whose --to-datetime gives
exactly the offsets Admin.list_offsets gives for that time. Live members (raw-wire
heartbeats) make delete and reset refuse."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.helpers.group_wire import heartbeat
from tests.helpers.wire import Wire
from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.errors import NonEmptyGroupError
from tslog.client.times import format_time_ms

pytestmark = pytest.mark.timeout(180)


def tslog(broker, *args):
    command = [sys.executable, "-m", "tslog.client.cli", *args, "--bootstrap", broker.bootstrap]
    return subprocess.run(command, capture_output=True, timeout=60)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def refused(result, message: str) -> None:
    assert result.returncode == 1
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tslog: error:"), result.stderr
    assert message in lines[0], lines[0]


def plan(broker, group: str, *args) -> dict[int, dict]:
    output = ok(tslog(broker, "groups", "reset-offsets", group, "--topic", "events",
                      "--format", "json", *args))
    return {row["partition"]: row for row in map(json.loads, output.splitlines())}


def committed(broker, group: str) -> dict[int, int]:
    with Admin(broker.bootstrap) as admin:
        return {tp.partition: value.offset
                for tp, value in admin.list_consumer_group_offsets(group).items()}


def produce(broker, counts: dict[int, int], tag: str = "r", create_ms=None) -> list:
    """Send counts[p] records to partition p of 'events'; returns their RecordMetadata."""
    with Producer(broker.bootstrap, linger_ms=0) as producer:
        return [producer.send("events", f"{tag}{i}".encode(), partition=partition,
                              timestamp_ms=None if create_ms is None else create_ms(i)).get(10)
                for partition, count in counts.items() for i in range(count)]


def wait_past(ms: int) -> None:
    while time.time() * 1000 <= ms + 1:
        time.sleep(0.001)


def append_time(broker, partition: int, offset: int) -> int:
    with Consumer(broker.bootstrap) as consumer:
        tp = TopicPartition("events", partition)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for record in consumer.poll(200):
                if record.offset == offset:
                    return record.log_append_time
    raise AssertionError(f"no record at offset {offset}")


@pytest.mark.slow
def test_list_describe_delete_and_refusals_while_a_member_is_live(broker):
    ok(tslog(broker, "topics", "create", "events", "--partitions", "2"))
    produce(broker, {0: 5, 1: 3})
    with Admin(broker.bootstrap) as admin:
        admin.alter_consumer_group_offsets("readers", {TopicPartition("events", 0): 2,
                                                       TopicPartition("events", 1): 3})
    with Wire(broker.host, broker.port) as wire:
        member_id = heartbeat(wire, "readers", "", 0, ["events"])["member_id"]
        assert ok(tslog(broker, "groups", "list")).split() == ["readers", "STABLE", "1",
                                                               "members"]
        oldest_unread = append_time(broker, 0, 2)
        before_ms = time.time() * 1000
        described = json.loads(ok(tslog(broker, "groups", "describe", "readers",
                                         "--format", "json")))
        after_ms = time.time() * 1000
        rows = {row["partition"]: row for row in described["partitions"]}
        assert (rows[0]["committed"], rows[0]["log_end"], rows[0]["lag"]) == (2, 5, 3)
        assert (rows[1]["committed"], rows[1]["log_end"], rows[1]["lag"]) == (3, 3, 0)
        assert rows[1]["lag_seconds"] == 0
        lag_ms = rows[0]["lag_seconds"] * 1000
        assert before_ms - oldest_unread - 1 <= lag_ms <= after_ms - oldest_unread + 1
        assert rows[0]["member"] == rows[1]["member"] == member_id
        (member,) = described["members"]
        assert member["member_id"] == member_id
        assert sorted(map(tuple, member["assigned"])) == [("events", 0), ("events", 1)]
        text = ok(tslog(broker, "groups", "describe", "readers"))
        assert "STABLE" in text and member_id in text and "LAG-SECONDS" in text

        refused(tslog(broker, "groups", "delete", "readers"), "live members")
        refused(tslog(broker, "groups", "reset-offsets", "readers", "--topic", "events",
                      "--to-earliest", "--execute"), "live members")
        with Admin(broker.bootstrap) as admin:  # Admin refuses too, with the same words
            with pytest.raises(NonEmptyGroupError, match="live members"):
                admin.alter_consumer_group_offsets("readers", {TopicPartition("events", 0): 0})
        assert committed(broker, "readers") == {0: 2, 1: 3}
        heartbeat(wire, "readers", member_id, -1)  # leaves

    assert ok(tslog(broker, "groups", "list")).split() == ["readers", "EMPTY", "0", "members"]
    assert "deleted group readers" in ok(tslog(broker, "groups", "delete", "readers"))
    assert ok(tslog(broker, "groups", "list")) == ""
    assert committed(broker, "readers") == {}  # its offsets went with it
    refused(tslog(broker, "groups", "delete", "readers"), "readers")


@pytest.mark.slow
def test_reset_to_datetime_plans_then_executes_the_offsets_list_offsets_gives(broker):
    ok(tslog(broker, "topics", "create", "events", "--partitions", "3"))
    first = produce(broker, {0: 3, 1: 1, 2: 2}, "first")
    middle = max(meta.log_append_time for meta in first)
    wait_past(middle)
    boundary = int(time.time() * 1000)
    wait_past(boundary)
    produce(broker, {0: 2, 1: 3, 2: 1}, "second")
    partitions = [TopicPartition("events", p) for p in range(3)]
    with Admin(broker.bootstrap) as admin:
        expected = admin.list_offsets({tp: boundary for tp in partitions})
        admin.alter_consumer_group_offsets("replay", {tp: 5 for tp in partitions[:1]})
    assert {tp.partition: found.offset for tp, found in expected.items()} == {0: 3, 1: 1, 2: 2}

    for mode in ([], ["--dry-run"]):  # both only print the plan
        rows = plan(broker, "replay", "--to-datetime", str(boundary), *mode)
        assert {p: row["new"] for p, row in rows.items()} == {0: 3, 1: 1, 2: 2}
        assert {p: row["current"] for p, row in rows.items()} == {0: 5, 1: None, 2: None}
        assert {p: row["log_append_time"] for p, row in rows.items()} == {
            tp.partition: found.timestamp for tp, found in expected.items()}
        assert committed(broker, "replay") == {0: 5}

    iso = format_time_ms(boundary)
    assert {p: r["new"] for p, r in plan(broker, "replay", "--to-datetime", iso).items()} == {
        0: 3, 1: 1, 2: 2}
    result = tslog(broker, "groups", "reset-offsets", "replay", "--topic", "events",
                   "--to-datetime", str(boundary), "--execute")
    text = ok(result)
    assert "3 offsets reset" in result.stderr.decode()
    assert format_time_ms(expected[partitions[0]].timestamp) in text
    assert committed(broker, "replay") == {0: 3, 1: 1, 2: 2}

    # relative forms: an hour ago is before every record; the future is past all of them
    assert {p: r["new"] for p, r in plan(broker, "replay", "--by-duration", "-1h").items()} \
        == {0: 0, 1: 0, 2: 0}
    assert {p: r["new"] for p, r in plan(broker, "replay", "--to-datetime", "+1h").items()} \
        == {0: 5, 1: 4, 2: 3}
    assert {p: r["new"] for p, r in plan(broker, "replay", "--to-datetime", "earliest").items()} \
        == {0: 0, 1: 0, 2: 0}


def test_reset_by_create_time(broker):
    ok(tslog(broker, "topics", "create", "events"))
    base = 1_700_000_000_000
    produce(broker, {0: 6}, create_ms=lambda i: base + i * 1000)
    tp = TopicPartition("events", 0)
    with Admin(broker.bootstrap) as admin:
        expected = admin.list_offsets({tp: base + 3000}, "create")[tp]
    assert expected.offset == 3
    rows = plan(broker, "old", "--to-datetime", str(base + 3000), "--timestamp-type", "create",
                "--execute")
    assert rows[0]["new"] == 3 and rows[0]["create_time"] == base + 3000
    assert committed(broker, "old") == {0: 3}
    # by LogAppendTime the same moment lies before every record
    assert plan(broker, "old", "--to-datetime", str(base + 3000))[0]["new"] == 0
    refused(tslog(broker, "groups", "describe", "nobody"), "does not exist")
    refused(tslog(broker, "groups", "describe", ""), "invalid")


@pytest.mark.slow
def test_shift_and_explicit_offsets_are_clamped_to_the_log(broker):
    ok(tslog(broker, "topics", "create", "events", "--partitions", "2"))
    produce(broker, {0: 4, 1: 6})
    refused(tslog(broker, "groups", "reset-offsets", "g", "--topic", "events",
                  "--shift-by", "-1"), "no committed offset")
    plan(broker, "g", "--to-offset", "2", "--execute")
    assert committed(broker, "g") == {0: 2, 1: 2}
    assert {p: r["new"] for p, r in plan(broker, "g", "--shift-by", "-5").items()} == {0: 0, 1: 0}
    assert {p: r["new"] for p, r in plan(broker, "g", "--shift-by", "3").items()} == {0: 4, 1: 5}
    assert {p: r["new"] for p, r in plan(broker, "g", "--to-offset", "99").items()} == {0: 4, 1: 6}
    assert plan(broker, "g", "--to-latest", "--partition", "1", "--execute")[1]["new"] == 6
    assert committed(broker, "g") == {0: 2, 1: 6}
    plan(broker, "g", "--to-earliest", "--execute")
    assert committed(broker, "g") == {0: 0, 1: 0}
    refused(tslog(broker, "groups", "reset-offsets", "g", "--topic", "events", "--partition",
                  "7", "--to-earliest"), "no partition 7")
    refused(tslog(broker, "groups", "reset-offsets", "g", "--topic", "events",
                  "--to-datetime", "yesterday-ish"), "cannot read")
