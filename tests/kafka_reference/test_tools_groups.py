"""kafka-consumer-groups, console consumers in a group, and the perf tools, against a
reference Apache Kafka and tslog's Kafka listener (see test_tools_topics.py).

No time is asserted: a rebalance is awaited by asking ``--describe`` until the members own
what they should (a bounded number of asks), and records are counted.
"""

from __future__ import annotations

import re
import signal
import threading
from datetime import datetime, timezone

import pytest

from tests.helpers.kafka_reference import (
    CONSOLE_CONSUMER,
    CONSUMER_GROUPS,
    CONSUMER_PERF,
    PRODUCER_PERF,
    run_tool,
    start_tool,
)
from tests.kafka_reference import normalize
from tests.kafka_reference.pairs import both, unique
from tests.kafka_reference.test_tools_topics import consume, produce, tool, topics

pytestmark = [pytest.mark.kafka_reference, pytest.mark.slow]
ASKS = 60  # --describe calls while waiting for a rebalance (each is a JVM start: seconds)


def groups(side, *args: str) -> str:
    """kafka-consumer-groups; it exits 0 even when it prints an error, so both streams."""
    done = run_tool(CONSUMER_GROUPS, "--bootstrap-server", side.bootstrap, *args)
    return done.stdout + "\n".join(line for line in done.stderr.splitlines()
                                   if line.startswith("Error"))


def reset(side, group: str, topic: str, *how: str) -> list[list[str]]:
    return normalize.table(groups(side, "--reset-offsets", "--group", group, "--topic", topic,
                                  *how, "--execute"))


def iso(ms: int) -> str:
    """Epoch ms as --to-datetime takes it (UTC, millisecond precision)."""
    when = datetime.fromtimestamp(ms / 1000, timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def test_consumer_groups_list_describe_reset_delete(pair):
    topic, group = unique("cg-topic"), unique("cg")

    def session(side):
        topics(side, "--create", "--topic", topic, "--partitions", "2",
               "--config", "message.timestamp.type=LogAppendTime")
        produce(side, topic, "".join(f"h:a\tk{i}\tfirst{i}\n" for i in range(6)))
        produce(side, topic, "".join(f"h:b\tk{i}\tsecond{i}\n" for i in range(6)))
        printed = consume(side, topic, "--group", group, "--from-beginning",
                          "--max-messages", "12")
        second = min(int(ms) for ms in re.findall(r"LogAppendTime:(\d+)\t.*\tsecond", printed))
        out = {"list": [g for g in normalize.lines(groups(side, "--list")) if g == group],
               "state": [row for row in normalize.table(groups(side, "--list", "--state"))
                         if row[0] in ("GROUP", group)],
               "describe": normalize.table(groups(side, "--describe", "--group", group)),
               "earliest": reset(side, group, topic, "--to-earliest"),
               "shift": reset(side, group, topic, "--shift-by", "2"),
               "datetime": reset(side, group, topic, "--to-datetime", iso(second)),
               "duration": reset(side, group, topic, "--by-duration", "P1D"),
               "lag": normalize.table(groups(side, "--describe", "--group", group)),
               "delete": normalize.lines(groups(side, "--delete", "--group", group)),
               "gone": normalize.lines(groups(side, "--describe", "--group", group))[:1]}
        return out

    kafka, tslog = both(pair, session)
    assert kafka == tslog
    assert tslog["list"] == [group] and tslog["state"][1] == [group, "Empty"]
    assert sum(int(row[3]) for row in tslog["describe"][1:]) == 12  # everything committed
    assert sum(int(row[3]) for row in tslog["earliest"][1:]) == 0
    assert sum(int(row[3]) for row in tslog["shift"][1:]) == 4
    assert sum(int(row[3]) for row in tslog["datetime"][1:]) == 6  # the first produce's
    assert sum(int(row[5]) for row in tslog["lag"][1:]) == 12
    assert "was successful" in tslog["delete"][0]


class Reader:
    """A console consumer in a group, left running; its printed lines are collected by a
    thread (``print.partition``), so a test can count what each member read."""

    def __init__(self, side, topic: str, group: str, log_path) -> None:
        self.process = start_tool(
            CONSOLE_CONSUMER, "--bootstrap-server", side.bootstrap, "--topic", topic,
            "--group", group, "--formatter-property", "print.partition=true",
            "--consumer-property", "client.id=reader", log_path=log_path)
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def partitions(self) -> set[str]:
        return {line.split("\t")[0] for line in self.lines if line.startswith("Partition:")}

    def stop(self) -> None:
        """SIGTERM: Kafka's console consumer closes its consumer, which leaves the group."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)
        self._thread.join(10)


def members(side, group: str) -> list[list[str]]:
    """--describe --members --verbose: rows of (member, host, client, #partitions, owned)."""
    return normalize.table(groups(side, "--describe", "--group", group, "--members",
                                  "--verbose"))


def wait_for(side, group: str, want: list[int]) -> list[list[str]]:
    """Ask --describe until the members own ``want`` partitions each (sorted counts)."""
    for _ in range(ASKS):
        rows = members(side, group)
        counts = sorted(int(row[4]) for row in rows[1:] if len(row) > 4 and row[4].isdigit())
        if counts == want:
            return rows
    raise AssertionError(f"{side.name}: members never owned {want}: {rows}")


def test_two_console_consumers_split_a_topic_and_rebalance(pair, tmp_path):
    topic, group = unique("split"), unique("split-group")

    def session(side):
        topics(side, "--create", "--topic", topic, "--partitions", "2")
        first = Reader(side, topic, group, tmp_path / f"{side.name}-first.log")
        second = Reader(side, topic, group, tmp_path / f"{side.name}-second.log")
        try:
            split = wait_for(side, group, [1, 1])
            produce(side, topic, "".join(f"h:x\tk{i}\tv{i}\n" for i in range(8)))
            wait_until_read(side, group, [first, second], 8)
            each = sorted(sorted(reader.partitions()) for reader in (first, second))
            second.stop()
            alone = wait_for(side, group, [2])
            before = len(first.lines)
            produce(side, topic, "".join(f"h:y\tk{i}\tw{i}\n" for i in range(8)))
            wait_until_read(side, group, [first], before + 8)
        finally:
            first.stop()
            second.stop()
        return {"split": split, "each": each, "alone": alone,
                "after": sorted({line.split("\t")[0] for line in first.lines[before:]})}

    kafka, tslog = both(pair, session)
    assert kafka == tslog
    assert tslog["each"] == [["Partition:0"], ["Partition:1"]]
    assert tslog["after"] == ["Partition:0", "Partition:1"]


def wait_until_read(side, group: str, readers: list[Reader], count: int) -> None:
    """Until the readers printed ``count`` lines in all, asking --describe between looks (a
    bounded wait that needs no clock: each ask is a tool run)."""
    for _ in range(ASKS):
        if sum(len(reader.lines) for reader in readers) >= count:
            return
        members(side, group)
    raise AssertionError(f"{side.name}: read {[r.lines for r in readers]}, wanted {count}")


def test_perf_tools_run_to_completion(pair):
    topic = unique("perf")

    def session(side):
        topics(side, "--create", "--topic", topic, "--partitions", "2")
        sent = {}
        for acks in ("1", "all"):
            done = run_tool(PRODUCER_PERF, "--topic", topic, "--num-records", "20000",
                            "--record-size", "100", "--throughput", "-1",
                            "--bootstrap-server", side.bootstrap,
                            "--command-property", f"acks={acks}")
            assert done.returncode == 0, done.stderr
            sent[acks] = re.findall(r"^(\d+) records sent", done.stdout, re.M)[-1]
        read = tool(side, CONSUMER_PERF, "--topic", topic, "--messages", "40000")
        header, numbers = normalize.lines(read)[-2:]
        fields = dict(zip((h.strip() for h in header.split(",")),
                          (n.strip() for n in numbers.split(","))))
        return sent, fields["data.consumed.in.nMsg"]

    kafka, tslog = both(pair, session)
    assert kafka == tslog == ({"1": "20000", "all": "20000"}, "40000")
