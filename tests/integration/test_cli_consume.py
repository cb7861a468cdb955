"""`tslog consume` as a time-replay user reads it: lines that say when and where each record
is, kcat's --format-string, one timeline across partitions (--ordered), a start at an offset,
and the command lines that cannot mean anything refused with exit code 2."""

from __future__ import annotations

import select
import subprocess
import sys
import time

import pytest

from tests.integration.test_cli_first_hour import ok, one_error_line, tslog


BASE = (int(time.time()) - 3600) * 1000  # an hour ago: the CreateTimes written


@pytest.fixture
def events(broker):
    """Topic `events` with 3 partitions written one record at a time, so the LogAppendTimes
    interleave across partitions: a (p2), b (p0), c (p1), d (p2), e (p0). Their CreateTimes
    run the other way (e is the oldest)."""
    b = ("--bootstrap", broker.bootstrap)
    ok(tslog("topics", "create", "events", "--partitions", "3", *b))
    for create_time, (value, partition) in zip(
            (BASE + 500, BASE + 400, BASE + 300, BASE + 200, BASE + 100),
            (("a", 2), ("b", 0), ("c", 1), ("d", 2), ("e", 0))):
        ok(tslog("produce", "events", "--partition", str(partition), "--key-separator", ":",
                 "--timestamp", str(create_time), *b, stdin=f"k-{value}:{value}\n".encode()))
    return b


@pytest.mark.slow
def test_text_lines_say_when_and_where_and_format_string_takes_kcat_fields(events):
    rows = [line.split("\t") for line in
            ok(tslog("consume", "events", "--to-time", "now", "--partition", "2",
                     *events)).splitlines()]
    assert [row[1:] for row in rows] == [["2", "0", "k-a", "a"], ["2", "1", "k-d", "d"]]
    assert all(row[0].startswith("20") and row[0].endswith("Z") for row in rows)  # ISO-8601
    custom = ok(tslog("consume", "events", "--to-time", "now", "--partition", "1",
                      "--timestamp-type", "create", "--format-string",
                      "%t|%p|%o|%T|%k|%K|%s|%S|%h|100%%\\n", *events))
    assert custom == f"events|1|0|{BASE + 300}|k-c|3|c|1||100%\n"
    values = ok(tslog("consume", "events", "--to-time", "now", "--partition", "0",
                      "--format", "value", *events))
    assert values == "b\ne\n"
    assert "%x" in one_error_line(tslog("consume", "events", "--format-string", "%x",
                                        *events), code=2)


@pytest.mark.slow
def test_ordered_merges_partitions_into_one_timeline(events):
    def ordered(*extra):
        return ok(tslog("consume", "events", "--from-time", "earliest", "--to-time", "now",
                        "--ordered", "--format", "value", *extra, *events)).split()

    assert ordered() == ["a", "b", "c", "d", "e"]  # by LogAppendTime: the order written
    assert ordered("--timestamp-type", "create", "--from-time", str(BASE)) == [
        "e", "d", "c", "b", "a"]
    assert ordered("--max-messages", "2") == ["a", "b"]
    assert "--to-time" in one_error_line(tslog("consume", "events", "--ordered", *events),
                                         code=2)


@pytest.mark.slow
def test_offset_starts_a_partition_there_and_impossible_ranges_are_refused(events):
    def from_offset(offset):
        return ok(tslog("consume", "events", "--partition", "2", "--offset", offset,
                        "--to-time", "now", "--format", "value", *events)).split()

    assert from_offset("1") == ["d"]
    assert from_offset("-2") == ["a", "d"]
    assert from_offset("-9") == ["a", "d"]  # back past the start: from the start
    assert "beyond" in one_error_line(tslog("consume", "events", "--partition", "2",
                                            "--offset", "7", *events))
    assert "--partition" in one_error_line(tslog("consume", "events", "--offset", "1",
                                                 *events), code=2)
    late_start = one_error_line(tslog("consume", "events", "--from-time", "-1m",
                                      "--to-time", "-2h", *events), code=2)
    assert "later than --to-time" in late_start


def read_line_within(stream, seconds: float) -> str:
    """The next line of a subprocess pipe, or "" if none comes in time."""
    ready, _, _ = select.select([stream], [], [], seconds)
    return stream.readline().decode() if ready else ""


@pytest.mark.slow
def test_a_tailing_consume_says_when_its_broker_goes_and_comes_back(broker):
    b = ("--bootstrap", broker.bootstrap)
    ok(tslog("topics", "create", "events", *b))
    tail = subprocess.Popen([sys.executable, "-m", "tslog.client.cli", "consume", "events",
                             "--format", "value", *b],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ok(tslog("produce", "events", *b, stdin=b"before\n"))
        assert read_line_within(tail.stdout, 30) == "before\n"
        started = time.monotonic()
        broker.kill()
        gone = read_line_within(tail.stderr, 10)
        assert gone.startswith("tslog: warning: broker 127.0.0.1:") and "unreachable" in gone
        assert time.monotonic() - started < 10
        broker.start()
        back = read_line_within(tail.stderr, 15)
        assert back.startswith("tslog: warning: broker 127.0.0.1:") and back.endswith(
            "is reachable again\n")
        ok(tslog("produce", "events", *b, stdin=b"after\n"))
        assert read_line_within(tail.stdout, 30) == "after\n"
    finally:
        tail.kill()
        tail.wait()
