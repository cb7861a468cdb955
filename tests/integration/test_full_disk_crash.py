"""A broker killed on a full disk comes back: it starts, serves reads, refuses writes with
KAFKA_STORAGE_ERROR, and takes writes again once space is freed, with every acknowledged
record intact.

Why this is a test of its own: a page of a memory map that the file system cannot back kills
the process with SIGBUS when touched. An active index is sized sparse ahead of its entries;
a crash leaves it so, and recovery used to read its holes through the map: on a full tmpfs
that killed the broker at every restart (exit -7). The topics here use the default index
interval, so filling the disk writes index entries into new pages as it goes, and the
restart before the fill leaves the active segments' indexes sized and sparse, as any broker
that has run a while has them.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.liveness import assert_serves_a_normal_client
from tests.helpers.tmpfs import free_bytes, mounted_tmpfs
from tests.helpers.wire import Wire, batch, split_values
from tslog.protocol.errors import ErrorCode

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

DISK_BYTES = 24 << 20


@pytest.fixture
def disk_broker(tmp_path):
    with mounted_tmpfs(tmp_path / "disk", DISK_BYTES) as disk:
        broker = BrokerProcess(disk / "data")
        try:
            yield broker.start()
        finally:
            broker.kill()


def fill(wire: Wire, topic: str, partitions: int) -> dict[int, list[bytes]]:
    """Produce ever smaller batches round the partitions until not even a one-byte record
    fits anywhere. Returns the values acknowledged per partition."""
    acknowledged: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for size, count in ((20_000, 8), (2000, 1), (100, 1), (1, 1)):
        full = set()
        while len(full) < partitions:
            for partition in set(range(partitions)) - full:
                done = len(acknowledged[partition])
                values = [b"%d:" % (done + i) + b"." * size for i in range(count)]
                answer = wire.produce(topic, partition, batch(values))
                if answer["error_code"]:
                    assert answer["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR, answer
                    full.add(partition)
                else:
                    acknowledged[partition] += values
    return acknowledged


def read_partition(wire: Wire, topic: str, partition: int) -> list[bytes]:
    values: list[bytes] = []
    while True:
        answer = wire.fetch(topic, partition, len(values))
        assert answer["error_code"] == 0, answer
        got = [value for _, value in split_values(answer["records"])]
        if not got:
            return values
        values += got


def test_a_broker_killed_on_a_full_disk_starts_serves_reads_and_writes_again_once_freed(
        disk_broker):
    broker, disk = disk_broker, disk_broker.data_dir.parent
    held = {("kept", 0): [b"first"], **{("filler", p): [b"early"] for p in range(3)}}
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("kept") == 0
        assert wire.create_topic("filler", partitions=3) == 0
        for (topic, partition), values in held.items():
            assert wire.produce(topic, partition, batch(values))["error_code"] == 0
    broker.restart()  # checkpoints written; the reopened active indexes are sized, sparse
    with Wire(broker.host, broker.port) as wire:
        fill_all(wire, held)
    assert free_bytes(disk) == 0 and sum(map(len, held.values())) > 300

    broker.restart(kill=True)  # recovery on the full disk: it must start at all
    with Wire(broker.host, broker.port) as wire:
        for (topic, partition), values in held.items():
            assert read_partition(wire, topic, partition) == values
        fill_all(wire, held)  # what still fits is taken; then KAFKA_STORAGE_ERROR, no crash
        assert wire.delete_topic("filler") == 0  # how an operator gets the space back
        assert wire.produce("kept", 0, batch([b"after"]))["error_code"] == 0
        held = {("kept", 0): held["kept", 0] + [b"after"]}
    broker.restart(kill=True)
    with Wire(broker.host, broker.port) as wire:
        assert read_partition(wire, "kept", 0) == held["kept", 0]
    assert_serves_a_normal_client(broker)
    assert "Fatal Python error" not in broker.log_text()


def fill_all(wire: Wire, held: dict[tuple[str, int], list[bytes]]) -> None:
    """``fill`` every partition of ``held``, adding what was acknowledged to it."""
    for topic in sorted({topic for topic, _ in held}, reverse=True):
        partitions = sorted(p for t, p in held if t == topic)
        for partition, values in fill(wire, topic, len(partitions)).items():
            held[topic, partition] += values


def test_a_fatal_signal_leaves_the_stack_of_every_thread_in_the_log(broker):
    os.kill(broker.process.pid, signal.SIGBUS)
    assert broker.exit_code() == -signal.SIGBUS
    log = broker.log_text()
    assert "Fatal Python error: Bus error" in log
    assert "most recent call first" in log and 'File "' in log
