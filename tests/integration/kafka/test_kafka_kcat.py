"""kcat (Debian's package; librdkafka underneath, nobody here wrote it) against tslog's Kafka
listener: a time window read with ``-o s@T1 -o e@T2`` prints what ``tslog consume
--from-time T1 --to-time T2`` prints, on a LogAppendTime and on a CreateTime topic; ``kcat -P``
with each codec is read back exactly by tslog's client; ``kcat -L`` lists the topic.

kcat's window, from its source (kcat.c): ``s@T`` starts each partition at the offset a
ListOffsets for T answers (the first record whose timestamp is >= T), and ``e@T`` stops a
partition at the first record whose timestamp is >= T, without printing it: so the end is
exclusive and, with CreateTimes out of order, later records below T stay unread. That is
what ``tslog consume --to-time`` documents ("stop before the first record at or after this
time"), which is why the two outputs must be equal line for line. The timestamp kcat sees is
the one the topic's ``message.timestamp.type`` hands Kafka clients, so tslog's side reads
with ``--timestamp-type append`` or ``create`` to match.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from tslog.client import Consumer, Producer, TopicPartition

FORMAT = "%p|%o|%T|%k|%s\\n"  # kcat's -f fields; tslog's --format-string takes the same
PARTITIONS = 3


def _kcat(*args: str, stdin: bytes | None = None) -> str:
    assert shutil.which("kcat"), "kcat missing: .ci/run installs Debian's kcat"
    done = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _tslog(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "tslog.client.cli", *args],
                          capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _lines(output: str) -> list[str]:
    """Sorted by (partition, offset): both tools interleave partitions as their fetches
    return, which is not part of what they promise."""
    return sorted(output.splitlines(), key=lambda line: tuple(map(int, line.split("|")[:2])))


def _next_ms() -> int:
    """A millisecond no record written before this call can carry, and none after it less."""
    now = int(time.time() * 1000) + 1
    while int(time.time() * 1000) < now:
        time.sleep(0.001)
    return now


def _same_window(kafka_broker, topic: str, t1: int, t2: int, timestamp_type: str) -> list[str]:
    kcat = _kcat("-C", "-b", kafka_broker.kafka, "-t", topic, "-o", f"s@{t1}", "-o", f"e@{t2}",
                 "-e", "-q", "-f", FORMAT)
    ours = _tslog("consume", topic, "--from-time", str(t1), "--to-time", str(t2),
                  "--timestamp-type", timestamp_type, "--format-string", FORMAT,
                  "--bootstrap", kafka_broker.bootstrap)
    assert _lines(kcat) == _lines(ours)
    return _lines(kcat)


def test_kcat_time_window_equals_tslog_consume_on_a_log_append_time_topic(kafka_broker):
    topic = kafka_broker.topic("kcatlat", partitions=PARTITIONS)  # LogAppendTime
    bounds = []
    with Producer(kafka_broker.bootstrap) as producer:
        for round_ in range(4):
            bounds.append(_next_ms())
            for partition in range(PARTITIONS):
                for i in range(2):
                    producer.send(topic, f"v{round_}.{partition}.{i}".encode(),
                                  key=f"k{round_}.{i}".encode(), partition=partition)
            producer.flush()  # every record acknowledged: its LogAppendTime is before the next bound
    # Rounds 1 and 2 lie in [bounds[1], bounds[3]): round 0 before, round 3 at or after.
    lines = _same_window(kafka_broker, topic, bounds[1], bounds[3], "append")
    assert sorted(line.split("|")[4] for line in lines) == sorted(
        f"v{r}.{p}.{i}" for r in (1, 2) for p in range(PARTITIONS) for i in range(2))
    assert all(bounds[1] <= int(line.split("|")[2]) < bounds[3] for line in lines)


def test_kcat_time_window_equals_tslog_consume_on_a_create_time_topic(kafka_broker):
    topic = kafka_broker.topic("kcatct", partitions=PARTITIONS,
                               message_timestamp_type="CreateTime")
    base = int(time.time() * 1000) - 600_000
    # Per partition, CreateTimes out of order: offset 3 is below T1 though after the start
    # offset, and offset 6 is below T2 though after the first record at or above it.
    steps = [0, 100, 300, 50, 400, 500, 420]
    with Producer(kafka_broker.bootstrap) as producer:
        for offset, step in enumerate(steps):
            for partition in range(PARTITIONS):
                producer.send(topic, f"v{partition}.{offset}".encode(),
                              key=f"k{offset}".encode(), partition=partition,
                              timestamp_ms=base + step + partition)
            producer.flush()  # several produces: one batch per round and partition
    lines = _same_window(kafka_broker, topic, base + 100, base + 450, "create")
    # From the first record >= T1 (offset 1) to before the first >= T2 (offset 5): offsets
    # 1-4, offset 3 included (a window of offsets, not a filter), offset 6 not.
    assert [line.split("|")[:2] for line in lines] == [
        [str(p), str(o)] for p in range(PARTITIONS) for o in range(1, 5)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_kcat_produces_with_each_codec_and_tslog_reads_it_exactly(kafka_broker, codec):
    topic = kafka_broker.topic(f"kcatp{codec}", message_timestamp_type="CreateTime")
    lines = [f"key{i}:{codec} value {i} " + "x" * (i * 50) for i in range(20)]
    _kcat("-P", "-b", kafka_broker.kafka, "-t", topic, "-p", "0", "-z", codec, "-K", ":",
          stdin="\n".join(lines).encode() + b"\n")
    with Consumer(kafka_broker.bootstrap) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        records = []
        deadline = time.monotonic() + 10
        while len(records) < len(lines) and time.monotonic() < deadline:
            records += consumer.poll(500)
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, line.split(":", 1)[0].encode(), line.split(":", 1)[1].encode())
        for i, line in enumerate(lines)]


def test_kcat_lists_the_topic_and_its_partitions(kafka_broker):
    topic = kafka_broker.topic("kcatlist", partitions=PARTITIONS)
    listing = _kcat("-L", "-b", kafka_broker.kafka, "-t", topic)
    assert f'topic "{topic}" with {PARTITIONS} partitions:' in listing
    for partition in range(PARTITIONS):
        assert f"partition {partition}, leader 0," in listing
