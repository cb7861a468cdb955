"""A real broker restarted over partitions closed cleanly leaves their logs unopened until
their first use: counted in the process's open descriptors and maps (``/proc``), never timed.
What a user sees stays the same: every record, the partition metrics, retention, and after a
SIGKILL every acknowledged record."""

from __future__ import annotations

import os
import re
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.broker_process import free_port
from tests.helpers.prometheus import parse_samples
from tests.helpers.wire import Wire, batch, split_values

pytestmark = pytest.mark.timeout(120)

TOPIC = "quiet"
PARTITIONS = 12


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return parse_samples(response.read().decode())


def files_in_use(pid: int, data_dir: Path) -> set[str]:
    """The partition directories (``quiet-3``) the process holds a descriptor or a map of."""
    root = str(data_dir.resolve()) + os.sep
    paths = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:  # closed meanwhile
            pass
    with open(f"/proc/{pid}/maps") as maps:
        paths += [line.split(None, 5)[-1].strip() for line in maps if root in line]
    names = {path[len(root):].split(os.sep)[0] for path in paths
             if path.startswith(root) and os.sep in path[len(root):]}
    return {name for name in names if re.fullmatch(r".+-\d+", name)}


def partition_rows(samples: dict[str, float], name: str) -> dict[int, float]:
    prefix = f'{name}{{partition="'
    return {int(key[len(prefix):].split('"')[0]): value for key, value in samples.items()
            if key.startswith(prefix) and f'topic="{TOPIC}"' in key}


def values(wire: Wire, partition: int) -> list[tuple[int, bytes]]:
    fetched = wire.fetch(TOPIC, partition, 0)
    assert fetched["error_code"] == 0
    return split_values(fetched["records"])


def test_a_clean_restart_opens_no_file_of_a_partition_nobody_used(broker_factory):
    port = free_port()
    broker = broker_factory(args=["--metrics-listen", f"127.0.0.1:{port}"])
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic(TOPIC, PARTITIONS) == 0
        for p in range(PARTITIONS):
            assert wire.produce(TOPIC, p, batch([b"p%d-a" % p, b"p%d-b" % p]))["error_code"] == 0
    before = scrape(port)
    broker.restart()  # SIGTERM (asserts a clean exit), then start again
    pid = broker.process.pid
    assert files_in_use(pid, broker.data_dir) == set()

    after = scrape(port)  # the partition metrics of logs left unopened, still unopened
    for name in ("tslog_log_size_bytes", "tslog_log_end_offset", "tslog_log_start_offset",
                 "tslog_log_segments"):
        assert partition_rows(after, name) == partition_rows(before, name), name
    assert len(partition_rows(after, "tslog_log_end_offset")) == PARTITIONS
    assert after['tslog_index_bytes{kind="time"}'] == before['tslog_index_bytes{kind="time"}']
    assert files_in_use(pid, broker.data_dir) == set()

    with Wire(broker.host, broker.port) as wire:  # the first use of one opens that one
        assert values(wire, 3) == [(0, b"p3-a"), (1, b"p3-b")]
        assert files_in_use(pid, broker.data_dir) == {f"{TOPIC}-3"}
        assert wire.produce(TOPIC, 5, batch([b"p5-c"]))["base_offset"] == 2
        assert files_in_use(pid, broker.data_dir) == {f"{TOPIC}-3", f"{TOPIC}-5"}
        assert [values(wire, p) for p in range(PARTITIONS)] == [
            [(0, b"p%d-a" % p), (1, b"p%d-b" % p)] + ([(2, b"p5-c")] if p == 5 else [])
            for p in range(PARTITIONS)]


def test_after_a_sigkill_a_log_used_since_the_clean_start_is_recovered_and_loses_nothing(
        broker_factory):
    broker = broker_factory()
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic(TOPIC, PARTITIONS) == 0
        for p in range(PARTITIONS):
            assert wire.produce(TOPIC, p, batch([b"old-%d" % p]))["error_code"] == 0
    broker.restart()
    with Wire(broker.host, broker.port) as wire:  # acks=all: flushed before the answer
        for i in range(5):
            assert wire.produce(TOPIC, 7, batch([b"new-%d" % i]))["base_offset"] == 1 + i
    broker.restart(kill=True)
    log_text = broker.log_text()
    assert f"{TOPIC}-7: recovery scanned" in log_text  # the one log written since the start
    assert log_text.count("recovery scanned") == 1  # the others kept their clean markers
    with Wire(broker.host, broker.port) as wire:
        assert values(wire, 7) == [(0, b"old-7")] + [(1 + i, b"new-%d" % i) for i in range(5)]
        assert [values(wire, p) for p in range(PARTITIONS) if p != 7] == [
            [(0, b"old-%d" % p)] for p in range(PARTITIONS) if p != 7]


def test_retention_deletes_an_expired_log_left_unopened_and_opens_no_other(broker_factory):
    """Retention by time reads a dormant log's oldest batch time (no log opened) and opens
    only a log with something to delete."""
    env = {"TSLOG_LOG_RETENTION_CHECK_INTERVAL_MS": "100"}
    broker = broker_factory(env=env)
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("young", 2, {"retention.ms": "86400000"}) == 0
        assert wire.create_topic("old", 1, {"retention.ms": "60000"}) == 0
        for p in range(2):
            assert wire.produce("young", p, batch([b"keep-%d" % p]))["error_code"] == 0
        assert wire.produce("old", 0, batch([b"expired"]))["error_code"] == 0
    # Again, with the broker's clock two minutes ahead: "old"'s only batch has expired.
    broker.restart(env={**env, "TSLOG_TEST_CLOCK_OFFSET_MS": "120000"})
    first = broker.data_dir / "old-0" / f"{0:020d}.log"
    for _ in range(300):  # retention rolls a new segment at offset 1, then deletes this one
        if not first.exists():
            break
        time.sleep(0.05)
    assert not first.exists()
    assert files_in_use(broker.process.pid, broker.data_dir) <= {"old-0"}
    with Wire(broker.host, broker.port) as wire:
        assert wire.list_offset("old", 0, -2)["offset"] == 1
        assert [split_values(wire.fetch("young", p, 0)["records"]) for p in range(2)] == [
            [(0, b"keep-0")], [(0, b"keep-1")]]
