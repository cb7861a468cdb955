"""Producer -> real broker -> consumer: every record comes back exactly once, as sent.

Goal: what a user notices first: records, keys, headers, times and offsets survive the trip
for every acks setting and with zstd. Method: a real broker subprocess per test (the
``broker`` fixture), the public sync API (and the async one once), and comparisons against
the RecordMetadata the producer returned.
"""

from __future__ import annotations

import collections
import time

import pytest

from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.aio import AsyncAdmin, AsyncConsumer, AsyncProducer


def consume_all(bootstrap, topic, count, *, timeout_s=20.0, **options):
    """Read ``count`` records of ``topic`` from the beginning (fail if they do not come)."""
    with Consumer(bootstrap, auto_offset_reset="earliest", **options) as consumer:
        consumer.subscribe([topic])
        records = []
        deadline = time.monotonic() + timeout_s
        while len(records) < count and time.monotonic() < deadline:
            records += consumer.poll(200)
        records += consumer.poll(100)  # nothing more may arrive
    assert len(records) == count, f"got {len(records)} of {count} records"
    return records


def test_records_across_partitions_come_back_exactly(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events", partitions=3)
    sent = {}
    with Producer(broker.bootstrap, linger_ms=2, batch_size=4096) as producer:
        futures = [(i, producer.send("events", b"value-%d" % i, key=b"key-%d" % (i % 17)))
                   for i in range(3000)]
        producer.flush()
        for i, future in futures:
            metadata = future.get(10)
            sent[(metadata.partition, metadata.offset)] = (i, metadata)
    records = consume_all(broker.bootstrap, "events", 3000)
    by_partition = collections.defaultdict(list)
    for record in records:
        i, metadata = sent[(record.partition, record.offset)]
        assert record.value == b"value-%d" % i and record.key == b"key-%d" % (i % 17)
        assert record.create_time == metadata.create_time
        assert record.log_append_time == metadata.log_append_time
        by_partition[record.partition].append(record.offset)
    assert sorted(by_partition) == [0, 1, 2]  # 17 keys spread over all partitions
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))  # in order, no gap, no duplicate
    # one key, one partition, in send order
    per_key = collections.defaultdict(set)
    for record in records:
        per_key[record.key].add(record.partition)
    assert all(len(partitions) == 1 for partitions in per_key.values())


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_every_acks_setting_delivers(broker, acks):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("acks", partitions=2)
    with Producer(broker.bootstrap, acks=acks) as producer:
        futures = [producer.send("acks", b"%d" % i, partition=i % 2) for i in range(200)]
        producer.flush()
        metadata = [future.get(10) for future in futures]
    if acks == 0:
        assert {m.offset for m in metadata} == {-1}  # nobody told us
    else:
        assert sorted(m.offset for m in metadata if m.partition == 0) == list(range(100))
        assert all(m.log_append_time >= m.create_time - 1000 for m in metadata)
    records = consume_all(broker.bootstrap, "acks", 200)
    assert sorted(int(r.value) for r in records) == list(range(200))


def test_zstd_batches_round_trip(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("zipped")
    payload = [b"compressible " * 50 + b"%d" % i for i in range(500)]
    with Producer(broker.bootstrap, compression="zstd") as producer:
        for value in payload:
            producer.send("zipped", value, key=b"k")
        producer.flush()
    records = consume_all(broker.bootstrap, "zipped", 500)
    assert [r.value for r in records] == payload
    assert [r.offset for r in records] == list(range(500))


def test_headers_null_values_explicit_partition_and_timestamp(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("details", partitions=4)
    now_ms = int(time.time() * 1000)
    with Producer(broker.bootstrap) as producer:
        first = producer.send("details", b"v", key=None, partition=3, timestamp_ms=now_ms - 5000,
                              headers=[("trace", b"abc"), ("n", b"")])
        tombstone = producer.send("details", None, key=b"gone", partition=3)
        assert first.get(10).create_time == now_ms - 5000
        assert tombstone.get(10).offset == 1
    records = consume_all(broker.bootstrap, "details", 2)
    assert [(r.partition, r.offset, r.key, r.value, r.create_time, r.headers) for r in records][0] \
        == (3, 0, None, b"v", now_ms - 5000, (("trace", b"abc"), ("n", b"")))
    assert (records[1].key, records[1].value, records[1].headers) == (b"gone", None, ())


def test_producer_refuses_values_that_are_not_bytes(broker):
    with Producer(broker.bootstrap) as producer:
        with pytest.raises(TypeError):
            producer.send("anything", "a str")


def test_serializers(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("text")
    with Producer(broker.bootstrap, value_serializer=str.encode,
                  key_serializer=str.encode) as producer:
        producer.send("text", "hello", key="k").get(10)
    (record,) = consume_all(broker.bootstrap, "text", 1, value_deserializer=bytes.decode,
                            key_deserializer=bytes.decode)
    assert (record.key, record.value) == ("k", "hello")


async def test_async_api_round_trip(broker):
    async with AsyncAdmin(broker.bootstrap) as admin:
        await admin.create_topic("async", partitions=2)
    async with AsyncProducer(broker.bootstrap, linger_ms=1) as producer:
        futures = [producer.send("async", b"%d" % i, key=b"%d" % i) for i in range(100)]
        metadata = [await future for future in futures]
        assert (await producer.send_and_wait("async", b"last", partition=0)).partition == 0
    async with AsyncConsumer(broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("async", 0), TopicPartition("async", 1)])
        records = []
        for _ in range(100):
            records += await consumer.poll(200)
            if len(records) >= 101:
                break
    assert sorted(r.value for r in records) == sorted([b"%d" % i for i in range(100)] + [b"last"])
    assert {(m.partition, m.offset) for m in metadata} <= {(r.partition, r.offset)
                                                          for r in records}


def test_send_to_a_topic_before_metadata_is_loaded_async(broker):
    """The async send never blocks: a record for a not-yet-known topic waits for metadata."""
    import asyncio

    async def scenario():
        async with AsyncProducer(broker.bootstrap) as producer:
            future = producer.send("late", b"x")  # topic does not exist yet
            async with AsyncAdmin(broker.bootstrap) as admin:
                await admin.create_topic("late")
            return await asyncio.wait_for(future, 20)

    assert asyncio.run(scenario()).offset == 0


async def test_async_consumer_works_without_start_after_assign_and_seek(broker):
    async with AsyncProducer(broker.bootstrap) as producer:
        async with AsyncAdmin(broker.bootstrap) as admin:
            await admin.create_topic("lazy")
        await producer.send("lazy", b"a")
        await producer.send("lazy", b"b")
    consumer = AsyncConsumer(broker.bootstrap)  # no start(): metadata is loaded on demand
    try:
        tp = TopicPartition("lazy", 0)
        consumer.assign([tp])
        consumer.seek(tp, 1)
        records = []
        for _ in range(50):
            records += await consumer.poll(100)
            if records:
                break
        assert [(r.offset, r.value) for r in records] == [(1, b"b")]
    finally:
        await consumer.close()


def test_a_flush_that_runs_out_of_time_raises_and_the_records_still_arrive(broker):
    """``flush(timeout_ms)`` never returns as if the records were delivered: with the broker
    paused it raises FlushTimeoutError; once the broker runs again, the records arrive and
    their futures say so."""
    import os
    import signal

    from tslog.client.errors import FlushTimeoutError, RequestTimedOutError

    with Admin(broker.bootstrap) as admin:
        admin.create_topic("paused")
    with Producer(broker.bootstrap, linger_ms=0) as producer:
        producer.send("paused", b"warm-up").get(10)
        os.kill(broker.process.pid, signal.SIGSTOP)
        try:
            future = producer.send("paused", b"while paused")
            with pytest.raises(FlushTimeoutError) as timed_out:
                producer.flush(200)
            assert isinstance(timed_out.value, RequestTimedOutError)
            assert not future.done()
        finally:
            os.kill(broker.process.pid, signal.SIGCONT)
        producer.flush()  # no timeout: returns once every record has its outcome
        assert future.done() and future.get(0).offset == 1
