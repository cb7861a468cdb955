"""`tslog consume --group`: two processes split a topic's partitions, commit what they print,
and a later run resumes where they stopped (Ctrl-C included) without printing a record twice;
an explicit --from-time overrides the committed positions."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

from tests.helpers.replication import wait_for
from tests.helpers.wire import Wire
from tslog.client import Admin, Producer
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(180)


def produce(bootstrap: str, numbers) -> None:
    with Producer(bootstrap) as producer:
        for n in numbers:
            for p in range(4):
                producer.send("events", f"{p}-{n}".encode(), partition=p)
        producer.flush()


class ConsumeProcess:
    """`tslog consume events --group G --format json ...` with its printed records."""

    started: list[ConsumeProcess] = []  # killed at the test's end, whatever happened

    def __init__(self, bootstrap: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tslog.client.cli", "consume", "events", "--group", "cli",
             "--format", "json", "--bootstrap", bootstrap, *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        ConsumeProcess.started.append(self)

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def values(self) -> list[str]:
        return [line["value"] for line in list(self.lines)]

    def partitions(self) -> set[int]:
        return {line["partition"] for line in list(self.lines)}

    def interrupt(self) -> int:
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(30)
        self._reader.join(10)
        return code

    def finish(self) -> int:
        code = self.process.wait(60)
        self._reader.join(10)
        return code


@pytest.fixture(autouse=True)
def no_consumer_outlives_the_test():
    """A failed assertion must not leave `tslog consume` processes polling a stopped broker."""
    yield
    while ConsumeProcess.started:
        process = ConsumeProcess.started.pop().process
        if process.poll() is None:
            process.kill()
            process.wait(10)


def described(broker) -> dict:
    with Wire(broker.host, broker.port) as wire:
        return wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": ["cli"]})["groups"][0]


def split_in_two(broker) -> bool:
    group = described(broker)
    return (group["state"] == "STABLE" and len(group["members"]) == 2
            and all(sum(len(t["partitions"]) for t in m["assigned"]) == 2
                    for m in group["members"]))


@pytest.mark.slow
def test_two_consume_group_processes_split_the_topic_and_a_restart_resumes(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", 4)
    produce(broker.bootstrap, range(5))
    first = ConsumeProcess(broker.bootstrap)
    wait_for(lambda: len(first.values()) == 20, 30, "the first process reads what is there")
    second = ConsumeProcess(broker.bootstrap)
    wait_for(lambda: split_in_two(broker), 60, "the two processes share the partitions")
    before = [len(first.values()), len(second.values())]
    produce(broker.bootstrap, range(5, 15))
    wait_for(lambda: len(first.values()) + len(second.values()) == 60, 30, "40 more records")
    new = [set(p.values()[count:]) for p, count in zip((first, second), before)]
    assert new[0] and new[1] and not new[0] & new[1]  # each read only its own partitions
    assert {int(v.split("-")[0]) for v in new[0]}.isdisjoint(
        {int(v.split("-")[0]) for v in new[1]})
    assert first.interrupt() == 130 and second.interrupt() == 130  # Ctrl-C: commit, leave
    printed = first.values() + second.values()
    assert sorted(printed) == sorted(f"{p}-{n}" for p in range(4) for n in range(15))

    produce(broker.bootstrap, range(15, 20))
    again = ConsumeProcess(broker.bootstrap, "--max-messages", "20")
    assert again.finish() == 0, again.process.stderr.read()
    assert sorted(again.values()) == sorted(f"{p}-{n}" for p in range(4) for n in range(15, 20))
    assert described(broker)["members"] == []  # it left the group on the way out

    replay = ConsumeProcess(broker.bootstrap, "--from-time", "earliest", "--max-messages", "8")
    assert replay.finish() == 0, replay.process.stderr.read()
    firsts: dict[str, int] = {}
    for value in replay.values():
        partition, number = value.split("-")
        firsts.setdefault(partition, int(number))
    assert len(replay.values()) == 8 and set(firsts.values()) == {0}  # from the beginning
