"""``Producer.send_section``: a pre-encoded records section goes out as one batch with the
idempotent producer's id and sequence, in order with ``send`` and ``send_batch`` around it
(a wrong sequence would be refused by the broker), and its metadata is the broker's.
Bad input raises before anything is queued. A real broker; the sync and async APIs."""

from __future__ import annotations

import asyncio

import pytest

from tslog.client import Admin, Producer
from tslog.client.aio import AsyncProducer
from tslog.client.errors import MessageTooLargeError, UnknownTopicOrPartitionError
from tslog.protocol.batch_header import HEADER_SIZE
from tslog.protocol.records import Section, build_batch

from .test_client_produce_consume import consume_all


def section_of(values, keys=None, times=None, headers=None) -> Section:
    """The section ``build_batch`` would put behind its header."""
    times = times or [1_700_000_000_000 + i for i in range(len(values))]
    batch = build_batch(values, keys=keys, create_times=times, headers=headers)
    return Section([batch[HEADER_SIZE:]], len(values), times[0], min(times), max(times),
                   headers is not None)


def test_sections_keep_order_and_sequences_with_sends_and_batches(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("pre", partitions=2)
    section = section_of([b"s%d" % i for i in range(100)], keys=[b"k"] * 100,
                         headers=[[("h", b"%d" % i)] for i in range(100)])
    with Producer(broker.bootstrap, linger_ms=50) as producer:  # idempotent (acks=all)
        producer.send("pre", b"before", partition=1)
        metadata = producer.send_section("pre", section, 1).get(10)
        producer.send_batch("pre", [b"b1", b"b2"], partition=1)
        last = producer.send_section("pre", section_of([b"after"]), 1).last(10)
        with pytest.raises(UnknownTopicOrPartitionError):
            producer.send_section("pre", section, 2)
        with pytest.raises(MessageTooLargeError):
            producer.send_section("pre", section_of([bytes(9 << 20)]), 0)
    assert [m.offset for m in metadata] == list(range(1, 101))
    assert metadata[7].create_time == 1_700_000_000_007 and last.offset == 103
    records = consume_all(broker.bootstrap, "pre", 104)
    assert [r.value for r in records] == ([b"before"] + [b"s%d" % i for i in range(100)]
                                          + [b"b1", b"b2", b"after"])
    assert list(records[8].headers) == [("h", b"7")] and records[8].key == b"k"


def test_a_section_for_a_topic_not_yet_known_waits_for_its_metadata(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("later", partitions=1)

    async def main():
        async with AsyncProducer(broker.bootstrap) as producer:
            return await producer.send_section("later", section_of([b"x", b"y"]), 0)

    metadata = asyncio.run(main())
    assert [m.offset for m in metadata] == [0, 1]
    assert [r.value for r in consume_all(broker.bootstrap, "later", 2)] == [b"x", b"y"]
