"""Helpers of the replication tests: cluster metadata, waiting, reading back, file checks."""

from __future__ import annotations

import time
from pathlib import Path

from tslog.broker.storage.files import SEGMENT_SUFFIXES
from tslog.client import Admin, Consumer, Producer, TopicPartition


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


def follower_back_after_retention(brokers, topic: str, config: dict | None = None) -> tuple:
    """A follower that comes back after retention on the leader passed its log end: create
    ``topic`` (3,000-byte segments, 6,000 bytes retained), write one record with every
    replica up, kill a follower, write 300 records (~90 bytes each) without it until the
    leader's log start moves, start the follower again and wait until it logs that it starts
    over at the leader's log start. Returns (PartitionInfo at creation, the follower, the
    leader's log start seen before the follower came back)."""
    info = create_replicated(brokers, topic, {**(config or {}), "segment.bytes": "3000",
                                              "retention.bytes": "6000"})
    follower = next(b for i, b in enumerate(brokers) if i != info.leader)
    others = [b for b in brokers if b is not follower]
    with Producer(bootstrap(brokers), acks="all") as producer:
        producer.send(topic, b"before").get(30)
    follower.kill()
    with Producer(bootstrap(others), acks=1, linger_ms=0, batch_size=1000) as producer:
        for i in range(300):
            producer.send(topic, b"record-%04d" % i + b"." * 80)
        producer.flush()
    tp = TopicPartition(topic, 0)
    with Admin(bootstrap(others)) as admin:
        start = wait_for(lambda: (o := admin.list_offsets({tp: -2})[tp])
                         and o.offset > 1 and o.offset, 30, "retention on the leader")
    follower.start()
    wait_for(lambda: "below the leader's log start" in follower.log_text(), 30,
             "the follower to start over at the leader's log start")
    return info, follower, start


def assert_serves_from_log_start_after_rejoining(brokers, topic: str, leader: int,
                                                 follower) -> tuple[int, list]:
    """After ``follower_back_after_retention``: the follower rejoins the ISR, an acks=all
    record after it lands at offset 301, every record from the log start on is served once
    and in order, and the follower's files equal the leader's. Returns (log start, records)."""
    wait_for(lambda: len(describe(bootstrap(brokers), topic).isr) == 3, 60,
             "the follower back in the ISR")
    with Producer(bootstrap(brokers), acks="all") as producer:  # every ISR member has it
        assert producer.send(topic, b"after").get(30).offset == 301
    tp = TopicPartition(topic, 0)
    with Admin(bootstrap(brokers)) as admin:
        earliest = admin.list_offsets({tp: -2})[tp].offset
    records = consume_all(bootstrap(brokers), topic, 302 - earliest)
    assert [r.offset for r in records] == list(range(earliest, 302))
    for broker in brokers:
        broker.terminate()
    assert_replica_files_identical(brokers[leader], [follower], f"{topic}-0")
    return earliest, records


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
