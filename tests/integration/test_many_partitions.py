"""A broker with thousands of partitions: it starts (cleanly and after SIGKILL) with every
record, answers one Metadata and one ListOffsets by time for all of them, and holds about one
descriptor per partition at rest (an index map holds none, ``broker/storage/maps.py``), and
logs one line at start for the partitions it leads rather than one per partition.

CI runs 2,000 partitions (2 topics x 1,000); ``bench/partitions.py`` measures 10,000 and times
what this only checks. Counts, not times: descriptors are read from /proc/<pid>/fd.
"""

from __future__ import annotations

import os

import pytest

from tests.helpers.wire import Wire, batch, split_values
from tslog.protocol.messages import ApiKey

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")]

TOPICS, PARTITIONS = 2, 1000
FIXED_DESCRIPTORS = 64  # the interpreter, the lock file, epoll, the listening sockets, ...


def placed() -> list[tuple[str, int]]:
    return [(f"m{t}", p) for t in range(TOPICS) for p in range(PARTITIONS)]


def list_offsets_by_time(wire: Wire, timestamp: int) -> list[dict]:
    topics: dict[str, list] = {}
    for topic, partition in placed():
        topics.setdefault(topic, []).append({"partition": partition, "timestamp": timestamp})
    answer = wire.request(ApiKey.LIST_OFFSETS, {
        "replica_id": -1, "timestamp_type": "append",
        "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
    return [p for t in answer["topics"] for p in t["partitions"]]


def assert_serves_every_partition(broker) -> None:
    with Wire(broker.host, broker.port, timeout_s=120) as wire:
        metadata = wire.request(ApiKey.METADATA, {"topics": None})
        listed = {(t["topic"], p["partition"]) for t in metadata["topics"]
                  for p in t["partitions"] if p["error_code"] == 0}
        assert listed >= set(placed())
        found = list_offsets_by_time(wire, 0)  # the first record at or after time 0
        assert len(found) == len(placed())
        assert all(p["error_code"] == 0 and p["offset"] == 0 for p in found)
        assert all(p["offset"] == -1 for p in list_offsets_by_time(wire, 2**62))  # none later
        for topic, partition in placed()[:: PARTITIONS // 4]:
            records = wire.fetch(topic, partition, 0)["records"]
            assert [value for _, value in split_values(records)] == [b"%s-%d" % (
                topic.encode(), partition)]


def test_thousands_of_partitions_start_serve_and_hold_one_descriptor_each(broker):
    with Wire(broker.host, broker.port, timeout_s=300) as wire:
        for t in range(TOPICS):
            assert wire.create_topic(f"m{t}", partitions=PARTITIONS) == 0
        for topic, partition in placed():
            value = b"%s-%d" % (topic.encode(), partition)
            assert wire.produce(topic, partition, batch([value]))["error_code"] == 0
    announced = broker.log_text().count("leader in epoch")  # one line a partition, at first use
    for kill in (False, True):
        broker.restart(kill=kill)
        at_rest = len(os.listdir(f"/proc/{broker.process.pid}/fd"))
        assert at_rest <= 1.2 * len(placed()) + FIXED_DESCRIPTORS, at_rest
        assert_serves_every_partition(broker)
    # A start logs one line for the partitions it leads, not one per partition: after the
    # clean stop every log waits for its first use (serving them all logged nothing more),
    # after the SIGKILL every log was recovered and is led from the start.
    text = broker.log_text()
    assert text.count("leader in epoch") == announced
    assert text.count(f"leading {len(placed())} of the {len(placed())} partitions") == 1
    assert text.count(f"{len(placed())} more, closed cleanly, take their state at their "
                      "first use") == 1
