"""Adding partitions to a topic on a single broker: CreatePartitions on the wire, through
``Admin.create_partitions`` and ``tslog topics add-partitions``; keyed records after it."""

from __future__ import annotations

from pathlib import Path

import pytest
from crc32c import crc32c

from tests.helpers.wire import Wire, batch, split_values
from tests.integration.test_cli import ok, tslog
from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.errors import InvalidPartitionsError, UnknownTopicOrPartitionError
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(120)


def grow(wire: Wire, topic: str, count: int, validate_only: bool = False) -> dict:
    return wire.request(ApiKey.CREATE_PARTITIONS, {
        "topics": [{"topic": topic, "count": count}], "timeout_ms": 10_000,
        "validate_only": validate_only})["topics"][0]


def partition_count(wire: Wire, topic: str) -> int:
    (entry,) = wire.request(ApiKey.METADATA, {"topics": [topic]})["topics"]
    assert entry["error_code"] == 0
    assert all(p["error_code"] == 0 and p["leader"] >= 0 for p in entry["partitions"])
    return len(entry["partitions"])


def values(wire: Wire, topic: str, partition: int) -> list[bytes]:
    fetched = wire.fetch(topic, partition, 0)
    assert fetched["error_code"] == 0
    return [value for _, value in split_values(fetched["records"])]


def test_grow_two_to_five_keeps_old_records_serves_new_partitions_and_survives_restart(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        for p in (0, 1):
            assert wire.produce("events", p, batch([b"old-%d-a" % p, b"old-%d-b" % p]))[
                "error_code"] == 0
        assert grow(wire, "events", 7, validate_only=True) == {
            "topic": "events", "error_code": 0, "error_message": None}
        assert partition_count(wire, "events") == 2  # validate_only changed nothing
        assert grow(wire, "events", 5) == {"topic": "events", "error_code": 0,
                                           "error_message": None}
        assert partition_count(wire, "events") == 5
        for p in (0, 1):
            assert values(wire, "events", p) == [b"old-%d-a" % p, b"old-%d-b" % p]
        for p in (2, 3, 4):
            assert values(wire, "events", p) == []
            result = wire.produce("events", p, batch([b"new-%d" % p]))
            assert (result["error_code"], result["base_offset"]) == (0, 0)
            assert values(wire, "events", p) == [b"new-%d" % p]
        assert wire.produce("events", 5, batch([b"x"]))["error_code"] == 3  # no partition 5
    assert sorted(d.name for d in broker.data_dir.glob("events-*")) == \
        [f"events-{p}" for p in range(5)]
    broker.restart()
    with Wire(broker.host, broker.port) as wire:
        assert partition_count(wire, "events") == 5
        assert values(wire, "events", 1) == [b"old-1-a", b"old-1-b"]
        assert values(wire, "events", 4) == [b"new-4"]
        assert wire.produce("events", 4, batch([b"after"]))["base_offset"] == 1


def test_wire_refuses_a_count_not_larger_and_an_unknown_topic(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 3) == 0
        for count in (3, 2):
            refused = grow(wire, "events", count)
            assert refused["error_code"] == 37  # INVALID_PARTITIONS
            assert "has 3 partition(s)" in refused["error_message"]
            assert f"new count {count}" in refused["error_message"]
        assert grow(wire, "events", 10_001)["error_code"] == 37
        unknown = grow(wire, "nope", 4)
        assert unknown["error_code"] == 3 and "nope" in unknown["error_message"]
        assert partition_count(wire, "events") == 3


def test_a_failed_write_leaves_the_topic_as_it_was(broker):
    """A new partition's log cannot be made (a file where its directory goes): the answer is
    a storage error, no new partition is served or kept, and the request works once the
    obstacle is gone."""
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("events", 2) == 0
        assert wire.produce("events", 1, batch([b"kept"]))["error_code"] == 0
        obstacle = broker.data_dir / "events-3"
        obstacle.write_bytes(b"not a directory")
        failed = grow(wire, "events", 5)
        assert failed["error_code"] == 56  # KAFKA_STORAGE_ERROR
        assert failed["error_message"].startswith("storage error: ")
        assert partition_count(wire, "events") == 2
        assert wire.produce("events", 2, batch([b"x"]))["error_code"] == 3
        assert not (broker.data_dir / "events-2").exists()  # the log made first is gone
        obstacle.unlink()
    broker.restart()
    with Wire(broker.host, broker.port) as wire:
        assert partition_count(wire, "events") == 2  # the old record was put back
        assert values(wire, "events", 1) == [b"kept"]
        assert grow(wire, "events", 5)["error_code"] == 0
        assert partition_count(wire, "events") == 5


def test_admin_create_partitions_and_its_typed_errors(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("orders", partitions=2)
        assert admin.create_partitions({"orders": 5}) is None
        description = admin.describe_topic("orders")
        assert [p.partition for p in description.partitions] == [0, 1, 2, 3, 4]
        with pytest.raises(InvalidPartitionsError, match="has 5 partition.*new count 5"):
            admin.create_partitions({"orders": 5})
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({"orders": 1})
        with pytest.raises(UnknownTopicOrPartitionError, match="nope"):
            admin.create_partitions({"nope": 3})
        admin.create_partitions({"orders": 9}, validate_only=True)
        assert len(admin.describe_topic("orders").partitions) == 5


KEYS = [b"user-%d" % i for i in range(40)]


def test_keyed_records_go_where_the_new_count_sends_them(broker):
    """The documented rule (docs/client.md): crc32c(key) % partitions, before and after."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("clicks", partitions=2)
        with Producer(broker.bootstrap) as producer:
            before = {key: producer.send("clicks", b"before", key=key).get(10).partition
                      for key in KEYS}
        admin.create_partitions({"clicks": 5})
    with Producer(broker.bootstrap) as producer:  # a producer that knows the new count
        after = {key: producer.send("clicks", b"after", key=key).get(10).partition
                 for key in KEYS}
    assert before == {key: crc32c(key) % 2 for key in KEYS}
    assert after == {key: crc32c(key) % 5 for key in KEYS}
    moved = [key for key in KEYS if before[key] != after[key]]
    assert moved  # some keys' records now sit in two partitions
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("clicks", p) for p in range(5)])
        records = []
        while len(records) < 2 * len(KEYS):
            batch_ = consumer.poll(1000)
            assert batch_, "the consumer stopped before reading every record"
            records += batch_
    for key in moved:
        assert sorted((r.value, r.partition) for r in records if r.key == key) == \
            [(b"after", after[key]), (b"before", before[key])]


def test_cli_add_partitions(broker):
    ok(tslog(broker, "topics", "create", "events", "--partitions", "2"))
    output = ok(tslog(broker, "topics", "add-partitions", "events", "--partitions", "5"))
    assert output == "topic events now has 5 partitions (was 2)\n"
    assert "5 partitions" in ok(tslog(broker, "topics", "describe", "events"))

    same = tslog(broker, "topics", "add-partitions", "events", "--partitions", "5")
    assert same.returncode == 1 and same.stdout == b""
    lines = same.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tslog: error: ")
    assert "has 5 partition(s)" in lines[0] and "new count 5" in lines[0]

    unknown = tslog(broker, "topics", "add-partitions", "nope", "--partitions", "3")
    assert unknown.returncode == 1 and len(unknown.stderr.decode().splitlines()) == 1
    assert "nope" in unknown.stderr.decode()

    missing = tslog(broker, "topics", "add-partitions", "events")
    assert missing.returncode == 2 and b"--partitions" in missing.stderr


def test_a_running_consumer_reads_new_partitions_it_is_assigned(broker):
    """docs/client.md: a consumer running before the change reads the new partitions once
    it assigns them."""
    with Admin(broker.bootstrap) as admin, \
            Consumer(broker.bootstrap, auto_offset_reset="earliest") as consumer:
        admin.create_topic("late", partitions=1)
        consumer.assign([TopicPartition("late", 0)])
        assert consumer.poll(200) == []
        admin.create_partitions({"late": 3})
        with Producer(broker.bootstrap) as producer:
            producer.send("late", b"in-2", partition=2).get(10)
        consumer.assign([TopicPartition("late", p) for p in range(3)])
        records = []
        for _ in range(20):
            records += consumer.poll(500)
            if records:
                break
        assert [(r.partition, r.value) for r in records] == [(2, b"in-2")]


def admin_example() -> str:
    """The indented code block under docs/client.md's "## Admin"."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text()
    section = text[text.index("\n## Admin\n"):]
    lines = section.split("\n\n")[1].splitlines()
    assert all(line.startswith("    ") for line in lines)
    return "\n".join(line[4:] for line in lines)


def test_the_admin_example_in_docs_client_md_runs(broker):
    code = admin_example()
    assert 'admin.create_partitions({"events": 5})' in code
    namespace: dict = {"Admin": Admin, "TopicPartition": TopicPartition}
    exec(compile(code.replace("127.0.0.1:9092", broker.bootstrap), "docs/client.md", "exec"),
         namespace)
    with Admin(broker.bootstrap) as admin:
        assert admin.list_topics() == []  # the example ends by deleting its topic
