"""The `tslog` command line against a real broker: topics, produce from stdin, replay by time."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.helpers.broker_process import free_port


def tslog(broker, *args, stdin: bytes | None = None, bootstrap: str | None = None):
    command = [sys.executable, "-m", "tslog.client.cli", *args]
    command += ["--bootstrap", bootstrap or broker.bootstrap]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def consume_json(broker, *args) -> list[dict]:
    output = ok(tslog(broker, "consume", "events", "--format", "json", *args))
    return [json.loads(line) for line in output.splitlines()]


def wait_past(ms: int) -> None:
    """Return once the wall clock is past ``ms`` (at most a few ms; no broker clock games)."""
    while time.time() * 1000 <= ms + 1:
        time.sleep(0.001)


def test_topics_create_list_describe_delete(broker):
    ok(tslog(broker, "topics", "create", "events", "--partitions", "3", "--config", "retention.ms=3600000"))
    assert "events" in ok(tslog(broker, "topics", "list")).split()
    described = ok(tslog(broker, "topics", "describe", "events"))
    assert "3 partitions" in described and "retention.ms=3600000" in described
    assert len([line for line in described.splitlines() if line.strip()[:1].isdigit()]) == 3
    ok(tslog(broker, "topics", "delete", "events"))
    assert "events" not in ok(tslog(broker, "topics", "list")).split()


def test_produce_lines_and_replay_exactly_a_time_range(broker):
    ok(tslog(broker, "topics", "create", "events", "--partitions", "2"))
    first = b"".join(b"k%d:first-%d\n" % (i % 5, i) for i in range(40))
    result = tslog(broker, "produce", "events", "--key-separator", ":", stdin=first)
    assert result.returncode == 0 and b"produced 40 records" in result.stderr

    everything = consume_json(broker, "--from-time", "earliest", "--to-time", "now")
    assert sorted(r["value"] for r in everything) == sorted(f"first-{i}" for i in range(40))
    assert {r["key"] for r in everything} == {f"k{i}" for i in range(5)}
    boundary = max(r["timestamp"] for r in everything)

    wait_past(boundary)
    second = b"".join(b"second-%d\n" % i for i in range(25))
    ok(tslog(broker, "produce", "events", stdin=second))
    replay = consume_json(broker, "--from-time", str(boundary + 1), "--to-time", "now")
    assert sorted(r["value"] for r in replay) == sorted(f"second-{i}" for i in range(25))
    assert all(r["timestamp"] > boundary for r in replay)

    window = consume_json(broker, "--from-time", "-1h", "--to-time", str(boundary + 1))
    assert sorted(r["value"] for r in window) == sorted(f"first-{i}" for i in range(40))

    offsets = [json.loads(line) for line in ok(tslog(
        broker, "offsets", "events", "--time", str(boundary + 1), "--format", "json")).splitlines()]
    for row in offsets:
        in_partition = [r for r in replay if r["partition"] == row["partition"]]
        expected = min(r["offset"] for r in in_partition) if in_partition else -1
        assert row["offset"] == expected

    text = ok(tslog(broker, "consume", "events", "--max-messages", "3", "--partition", "0"))
    assert len(text.splitlines()) == 3


def test_iso_times_and_create_time(broker):
    ok(tslog(broker, "topics", "create", "events"))
    ok(tslog(broker, "produce", "events", stdin=b"a\nb\n"))
    records = consume_json(broker, "--from-time", "2020-01-01T00:00:00Z", "--to-time", "now")
    assert [r["value"] for r in records] == ["a", "b"]
    iso = records[0]["timestamp_iso"]
    assert iso.endswith("Z") and consume_json(broker, "--from-time", iso, "--to-time", "now")
    by_create = consume_json(broker, "--from-time", "-1h", "--to-time", "now", "--timestamp-type", "create")
    assert [r["value"] for r in by_create] == ["a", "b"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("consume", "missing", "--to-time", "now"), "missing"),
        (("consume", "events", "--from-time", "yesterday-ish"), "cannot read"),
        (("consume", "events", "--from-time", "1700000"), "epoch"),
        (("topics", "create", "bad/name"), ""),
        (("topics", "create", "events", "--config", "nonsense"), "KEY=VALUE"),
    ],
)
def test_errors_print_one_line_and_exit_non_zero(broker, args, message):
    ok(tslog(broker, "topics", "create", "events"))
    result = tslog(broker, *args)
    assert result.returncode != 0
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tslog: error:"), result.stderr
    assert message in lines[0]


def test_unreachable_broker_is_one_line_error(broker):
    result = tslog(broker, "topics", "list", bootstrap=f"127.0.0.1:{free_port()}")
    assert result.returncode == 1
    assert len(result.stderr.decode().strip().splitlines()) == 1
