"""``Producer.send_batch``: many records per call, each one landing exactly as ``send`` would.

Goal: the batch API is the producer's fast path, so it must not trade correctness for speed:
offsets and LogAppendTimes in the returned metadata are the broker's, records come back
exactly (keys, values, headers, times, order), key partitioning matches ``send``'s, records
sent before a batch stay before it, and bad input raises before anything is queued.
Method: a real broker subprocess per test and the public sync and async APIs.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tslog.client import Admin, Consumer, Producer, RecordMetadata, TopicPartition
from tslog.client._partitioner import key_partition
from tslog.client.aio import AsyncAdmin, AsyncProducer
from tslog.client.errors import MessageTooLargeError, UnknownTopicOrPartitionError

from .test_client_produce_consume import consume_all


def test_offsets_and_log_append_times_match_what_is_consumed(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("bulk", partitions=1)
    values = [b"value-%d" % i for i in range(2500)]
    before = int(time.time() * 1000)
    with Producer(broker.bootstrap, batch_size=4096) as producer:  # several batches per call
        first = producer.send("bulk", b"single").get(10)
        metadata = producer.send_batch("bulk", values).get(10)
        last = producer.send("bulk", b"after").get(10)
    assert first.offset == 0 and last.offset == 2501
    assert [m.offset for m in metadata] == list(range(1, 2501))
    assert all(type(m) is RecordMetadata and m.topic == "bulk" and m.partition == 0
               for m in metadata)
    assert all(m.create_time >= before for m in metadata)
    records = consume_all(broker.bootstrap, "bulk", 2502)
    assert [r.value for r in records] == [b"single"] + values + [b"after"]
    by_offset = {r.offset: r for r in records}
    for m in metadata:
        record = by_offset[m.offset]
        assert (record.log_append_time, record.create_time) == (m.log_append_time,
                                                                m.create_time)


def test_keys_headers_timestamps_and_nulls_come_back_exactly(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("rich", partitions=3)
    count = 300
    values = [None if i % 50 == 7 else b"v%d" % i for i in range(count)]
    keys = [None if i % 3 == 0 else b"key-%d" % (i % 11) for i in range(count)]
    times = [1_700_000_000_000 + i for i in range(count)]
    headers = [[("i", b"%d" % i)] if i % 4 == 0 else None for i in range(count)]
    with Producer(broker.bootstrap) as producer:
        metadata = producer.send_batch("rich", values, keys=keys, timestamp_ms=times,
                                       headers=headers).get(10)
        # send() puts the same key on the same partition as send_batch did
        single = producer.send("rich", b"x", key=b"key-5").get(10)
    assert len(metadata) == count
    for key, m in zip(keys, metadata):
        if key is not None:
            assert m.partition == key_partition(key, 3)
    assert single.partition == key_partition(b"key-5", 3)
    assert [m.create_time for m in metadata] == times
    records = consume_all(broker.bootstrap, "rich", count + 1)
    found = {(r.partition, r.offset): r for r in records}
    for i, m in enumerate(metadata):
        record = found[m.partition, m.offset]
        expected_headers = (("i", b"%d" % i),) if i % 4 == 0 else ()
        assert (record.key, record.value, record.create_time, record.headers,
                record.log_append_time) == (keys[i], values[i], times[i], expected_headers,
                                            m.log_append_time)
    # within a partition, the records keep the input's order
    for partition in range(3):
        offsets = [m.offset for m in metadata if m.partition == partition]
        assert offsets == sorted(offsets)


def test_empty_keys_stay_empty_not_null(broker):
    """An empty key is a key: Kafka and ``send`` keep ``b""`` apart from a null key."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("empty-keys", partitions=1)
    with Producer(broker.bootstrap) as producer:
        producer.send_batch("empty-keys", [b"a", b"b"], keys=[b"", b""], partition=0).get(10)
        producer.send_batch("empty-keys", [b"c", b"d"], keys=[None, b""], partition=0).get(10)
    records = consume_all(broker.bootstrap, "empty-keys", 4)
    assert [(r.key, r.value) for r in records] == [(b"", b"a"), (b"", b"b"), (None, b"c"),
                                                   (b"", b"d")]


def test_explicit_partition_acks_zero_and_callbacks(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("pick", partitions=2)
    with Producer(broker.bootstrap, acks=0) as producer:
        future = producer.send_batch("pick", [b"a", b"b"], partition=1)
        called = []
        future.add_done_callback(called.append)
        assert [(m.partition, m.offset) for m in future.get(10)] == [(1, -1), (1, -1)]
        producer.flush()
        assert called == [future] and future.done() and future.exception() is None
    with Producer(broker.bootstrap) as producer:
        assert producer.send_batch("pick", []).get(1) == []
    records = consume_all(broker.bootstrap, "pick", 2)
    assert [(r.partition, r.offset, r.value) for r in records] == [(1, 0, b"a"), (1, 1, b"b")]


def test_bad_input_raises_before_anything_is_queued(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("strict", partitions=2)
    with Producer(broker.bootstrap, max_request_size=1000) as producer:
        with pytest.raises(TypeError):
            producer.send_batch("strict", [b"ok", "text"])
        with pytest.raises(ValueError):
            producer.send_batch("strict", [b"a", b"b"], keys=[b"k"])
        with pytest.raises(ValueError):
            producer.send_batch("strict", [b"a"], timestamp_ms=[1, 2])
        with pytest.raises(MessageTooLargeError):
            producer.send_batch("strict", [b"a", b"x" * 2000])
        with pytest.raises(UnknownTopicOrPartitionError):
            producer.send_batch("strict", [b"a"], partition=2)
        with pytest.raises(UnknownTopicOrPartitionError):
            producer.send_batch("missing-topic", [b"a"])
        producer.flush()
    with Consumer(broker.bootstrap) as consumer:
        ends = consumer.end_offsets([TopicPartition("strict", 0), TopicPartition("strict", 1)])
    assert set(ends.values()) == {0}


async def test_async_send_batch_and_a_topic_created_later(broker):
    async with AsyncAdmin(broker.bootstrap) as admin:
        await admin.create_topic("abulk", partitions=1)
    async with AsyncProducer(broker.bootstrap, value_serializer=str.encode) as producer:
        metadata = await producer.send_batch("abulk", ["a", "b", "c"])
        assert [m.offset for m in metadata] == [0, 1, 2]
        late = producer.send_batch("alate", ["x", "y"])  # the topic does not exist yet
        async with AsyncAdmin(broker.bootstrap) as admin:
            await admin.create_topic("alate")
        assert [m.offset for m in await asyncio.wait_for(late, 20)] == [0, 1]
    records = consume_all(broker.bootstrap, "abulk", 3)
    assert [r.value for r in records] == [b"a", b"b", b"c"]


def test_poll_batches_returns_columns_from_the_position_on(broker):
    """The columnar poll: batches as columns, starting where poll() left off."""
    from tslog.client import ColumnBatch
    from tslog.protocol.records import to_arrow

    with Admin(broker.bootstrap) as admin:
        admin.create_topic("columns", partitions=1)
    values = [b"r%d" % i for i in range(500)]
    with Producer(broker.bootstrap) as producer:
        producer.send_batch("columns", values[:200]).get(10)
        producer.send_batch("columns", values[200:], keys=[b"k"] * 300).get(10)
    tp = TopicPartition("columns", 0)
    with Consumer(broker.bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 50)
        first = []
        while not first:
            first = consumer.poll(timeout_ms=2000, max_records=10)
        assert [r.offset for r in first] == list(range(50, 60))
        got = []
        deadline = time.monotonic() + 20
        while consumer.position(tp) < 500 and time.monotonic() < deadline:
            got += consumer.poll_batches(timeout_ms=500)
        assert consumer.position(tp) == 500
        assert consumer.poll_batches(timeout_ms=100) == []
    assert all(type(batch) is ColumnBatch and batch.topic == "columns" for batch in got)
    offsets, read = [], []
    for batch in got:
        table = to_arrow(batch.columns).slice(batch.start)
        offsets += table.column("offset").to_pylist()
        read += table.column("value").to_pylist()
    assert offsets == list(range(60, 500))
    assert read == values[60:]
