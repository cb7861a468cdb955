"""Failover by source time (issue 39, item 3), between two real single-broker clusters: the
first target record whose source LogAppendTime is >= T, found through the target's
create-time index (the mirror writes CreateTime = source LAT), equals a brute-force oracle
over the reserved ``tslog.mirror.lat`` headers for random T - after a copy interrupted by
SIGKILLs of the mirror while producers write with old CreateTimes - through the client
helper, ``tslog offsets --source-time`` and ``tslog groups translate --to-datetime``; and it
stays exact on a target partition an older mirror wrote (producers' CreateTimes)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading

import pytest

from tests.helpers.mirror import (MirrorProcess, as_source, copied_count, end_offsets,
                                  read_all, wait_for)
from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.mirror import offsets_for_source_times, reader
from tslog.client.mirror import headers as reserved

TOPIC, PARTITIONS = "events", 2


def _produce(bootstrap: str, stop: threading.Event, rng: random.Random) -> None:
    """Small batches with CreateTimes from years ago, in no order, until ``stop``."""
    with Producer(bootstrap) as producer:
        n = 0
        while not stop.is_set() and n < 3000:
            old = [1_500_000_000_000 + rng.randrange(10**9) for _ in range(10)]
            producer.send_batch(TOPIC, [b"e%d-%d" % (n, i) for i in range(10)],
                                partition=n % PARTITIONS, timestamp_ms=old).get(timeout=30)
            n += 1
            if n % 50 == 0:
                stop.wait(0.002)  # let LATs move on now and then


class _CountingConsumer(Consumer):
    """A target consumer that counts the single-record reads a lookup makes (one seek each)."""

    seeks = 0

    def seek(self, tp, offset) -> None:
        self.seeks += 1
        super().seek(tp, offset)


def _oracle(records, timestamp: int):
    """(offset, source LAT) of the first record whose tslog.mirror.lat >= T, by a scan."""
    for record in records:
        lat = reserved.source_of(record.headers)[2]
        if lat >= timestamp:
            return record.offset, lat
    return None


def _random_times(records, rng: random.Random, count: int) -> list[int]:
    lats = sorted({reserved.source_of(r.headers)[2] for r in records})
    picks = [lats[0] - 1000, lats[0], lats[-1], lats[-1] + 1, lats[-1] + 10_000]
    for _ in range(count):
        lat = rng.choice(lats)
        picks.append(lat + rng.choice((-1, 0, 1)))
        picks.append(rng.randint(lats[0], lats[-1]))
    return picks


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tslog.client.cli", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_failover_by_source_time_equals_the_oracle_across_mirror_kills(broker_factory, tmp_path):
    source, target = broker_factory("source"), broker_factory("target")
    with Admin(source.bootstrap) as admin:
        admin.create_topic(TOPIC, PARTITIONS)
    rng = random.Random(39)
    mirror = MirrorProcess(tmp_path / "mirror.log", "--source", source.bootstrap,
                           "--target", target.bootstrap, "--topics", TOPIC)
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(source.bootstrap, stop, rng))
    producer.start()
    try:
        mirror.start()
        for _ in range(3):  # SIGKILL the mirror at random moments while the producer writes
            copied = copied_count(target.bootstrap, TOPIC, PARTITIONS)
            wait_for(lambda: copied_count(target.bootstrap, TOPIC, PARTITIONS) > copied,
                     "the mirror to copy more")
            threading.Event().wait(rng.uniform(0.0, 0.3))
            mirror.kill()
            mirror.start()
        stop.set()
        producer.join(60)
        expected = end_offsets(source.bootstrap, TOPIC, PARTITIONS)
        wait_for(lambda: end_offsets(target.bootstrap, TOPIC, PARTITIONS) == expected,
                 "the target to catch up", timeout_s=60)
    finally:
        stop.set()
        producer.join(30)
        mirror.stop()
    copied, original = (read_all(target.bootstrap, TOPIC, PARTITIONS),
                        read_all(source.bootstrap, TOPIC, PARTITIONS))
    for partition in range(PARTITIONS):  # exactly once, in order, fields kept
        assert as_source(copied[partition]) == [
            (r.key, r.value, r.headers, r.create_time) for r in original[partition]]
        assert [reserved.source_of(r.headers)[2] for r in copied[partition]] == [
            r.log_append_time for r in original[partition]]
        assert [r.create_time for r in copied[partition]] == [
            r.log_append_time for r in original[partition]]

    with _CountingConsumer(target.bootstrap, auto_offset_reset="earliest",
                           fetch_max_wait_ms=20) as consumer:
        for partition in range(PARTITIONS):
            tp = TopicPartition(TOPIC, partition)
            for timestamp in _random_times(copied[partition], rng, 15):
                consumer.seeks = 0
                found = offsets_for_source_times(consumer, {tp: timestamp})[tp]
                assert (None if found is None else tuple(found)) == \
                    _oracle(copied[partition], timestamp), timestamp
                # Indexed: the create-time index answers and two record reads check it (a
                # binary search over the headers would take ~log2(n) reads).
                assert consumer.seeks <= 4, (timestamp, consumer.seeks)

    # The command line: tslog offsets --source-time, one random T, every partition.
    timestamp = rng.choice(_random_times(copied[0], rng, 1)[5:])
    done = _cli("--bootstrap", target.bootstrap, "offsets", TOPIC, "--time", str(timestamp),
                "--source-time", "--format", "json")
    assert done.returncode == 0, done.stderr

    rows = [json.loads(line) for line in done.stdout.splitlines()]
    for row in rows:
        want = _oracle(copied[row["partition"]], timestamp)
        assert (row["offset"], row["timestamp"]) == (want or (-1, -1))

    # tslog groups translate --to-datetime commits those offsets for a group on the target,
    # from which it reads exactly the records whose source LAT >= T (the source is gone).
    source.kill()
    with Admin(target.bootstrap) as admin:
        assert admin.list_consumer_group_offsets("failover") == {}
    done = _cli("groups", "translate", "failover", "--source", source.bootstrap, "--target",
                target.bootstrap, "--topic", TOPIC, "--to-datetime", str(timestamp),
                "--execute")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "committed the offsets on the target" in done.stdout
    wanted = {(p, r.offset) for p in range(PARTITIONS) for r in copied[p]
              if reserved.source_of(r.headers)[2] >= timestamp}
    seen = []
    with Consumer(target.bootstrap, group_id="failover") as consumer:
        consumer.subscribe([TOPIC])
        wait_for(lambda: len(seen) >= len(wanted) or seen.extend(
            (r.partition, r.offset) for r in consumer.poll(timeout_ms=200)),
            "the group to read from T on")
    assert len(seen) == len(set(seen)) and set(seen) == wanted


@pytest.mark.slow
def test_source_time_is_exact_on_a_partition_an_older_mirror_wrote(broker_factory):
    """Records with the reserved headers but the producers' CreateTimes (what a mirror
    before CreateTime = source LAT wrote): the index alone would be wrong, the answer
    checked against the headers is not."""
    target = broker_factory("target")
    with Admin(target.bootstrap) as admin:
        admin.create_topic("old", 1)
    rng = random.Random(7)
    lats = sorted(1_700_000_000_000 + rng.randrange(100_000) for _ in range(300))
    headers = [[(reserved.PARTITION, (0).to_bytes(4, "big")),
                (reserved.OFFSET, n.to_bytes(8, "big")), (reserved.LAT, lat.to_bytes(8, "big"))]
               for n, lat in enumerate(lats)]
    with Producer(target.bootstrap) as producer:
        for first in range(0, 300, 30):
            producer.send_batch("old", [b"x"] * 30, partition=0,
                                timestamp_ms=[1_600_000_000_000 + rng.randrange(10**10)
                                              for _ in range(30)],
                                headers=headers[first:first + 30]).get(timeout=30)
    records = read_all(target.bootstrap, "old", 1)[0]
    tp = TopicPartition("old", 0)
    with reader(target.bootstrap) as consumer:
        for timestamp in _random_times(records, rng, 10):
            found = offsets_for_source_times(consumer, {tp: timestamp})[tp]
            assert (None if found is None else tuple(found)) == _oracle(records, timestamp)
