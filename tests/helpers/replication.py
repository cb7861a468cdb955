"""Helpers of the replication tests: cluster metadata, waiting, reading back, file checks."""

from __future__ import annotations

import time
from pathlib import Path

from tslog.broker.storage.files import SEGMENT_SUFFIXES
from tslog.client import Admin, Consumer


def bootstrap(brokers) -> str:
    return ",".join(b.bootstrap for b in brokers)


def create_replicated(brokers, topic: str, config: dict):
    """Create ``topic`` (1 partition, replication factor 3); wait for a leader and a full
    ISR and return its PartitionInfo."""
    with Admin(bootstrap(brokers)) as admin:
        admin.create_topic(topic, partitions=1, replication_factor=3, config=config)
    return wait_for(lambda: (p := describe(bootstrap(brokers), topic)).leader >= 0
                    and len(p.isr) == 3 and p, 30, "a leader and a full ISR")


def describe(bootstrap: str, topic: str, partition: int = 0):
    """The partition's PartitionInfo (leader, leader_epoch, replicas, isr), fresh."""
    with Admin(bootstrap, retries=10) as admin:
        return admin.describe_topic(topic).partitions[partition]


def wait_for(condition, timeout_s: float, what: str):
    """Poll ``condition`` until it returns something truthy (returned); fail after timeout."""
    deadline = time.monotonic() + timeout_s
    last_error = None
    while time.monotonic() < deadline:
        try:
            result = condition()
            if result:
                return result
        except Exception as exc:  # noqa: BLE001 - a broker may be restarting: poll again
            last_error = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} ({last_error!r})")


def consume_all(bootstrap: str, topic: str, count: int, timeout_s: float = 30.0) -> list:
    """Every record of ``topic`` from the start: at least ``count``, then whatever follows."""
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.subscribe([topic])
        records: list = []
        deadline = time.monotonic() + timeout_s
        while len(records) < count and time.monotonic() < deadline:
            records += consumer.poll(200)
        records += consumer.poll(300)
    assert len(records) >= count, f"got {len(records)} of {count} records"
    return records


def segment_files(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())
            if path.suffix in SEGMENT_SUFFIXES}


def assert_replica_files_identical(leader, followers, partition_dir: str) -> int:
    """Assert every follower's .log/.index/.timeindex/.ctindex files equal the leader's;
    return how many segments there are."""
    expected = segment_files(leader.data_dir / partition_dir)
    assert expected, "the leader has no segment files"
    for follower in followers:
        actual = segment_files(follower.data_dir / partition_dir)
        assert sorted(actual) == sorted(expected), f"{follower.data_dir.name}: other segments"
        for name, data in expected.items():
            assert actual[name] == data, f"{follower.data_dir.name}/{name} differs"
    return sum(1 for name in expected if name.endswith(".log"))


def assert_rejoins_with_the_leaders_files(brokers, returning, topic: str) -> None:
    """Start ``returning`` (a former leader), wait until the ISR is whole again, stop every
    broker and assert its files of partition 0 equal the current leader's, byte for byte."""
    returning.start()
    wait_for(lambda: len(describe(bootstrap(brokers), topic).isr) == len(brokers), 60,
             f"broker {returning.node_id} back in the ISR")
    leader = brokers[describe(bootstrap(brokers), topic).leader]
    for broker in brokers:
        broker.terminate()
    assert_replica_files_identical(leader, [returning], f"{topic}-0")
