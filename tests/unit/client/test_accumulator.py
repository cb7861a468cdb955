"""Batching logic without I/O: when batches close, when they are due, what a record learns.

Method: drive ``RecordAccumulator`` with explicit ``now`` values (no sleeping) and decode
the batches it builds with the real record decoder.
"""

import asyncio

import pytest

from tslog.client._accumulator import LOOKING_NOW, RECORD_OVERHEAD_BYTES, RecordAccumulator
from tslog.client._types import RecordMetadata, TopicPartition
from tslog.protocol.batch_header import COMPRESSION_ZSTD, parse_header
from tslog.protocol.records import iter_records

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_batch_closes_when_batch_size_is_reached():
    acc = RecordAccumulator(batch_size=10 * (RECORD_OVERHEAD_BYTES + 4), linger_ms=1000)
    closed = []
    for i in range(25):
        _, _, batch = acc.append(TP0, b"%04d" % i, None, 1000 + i, None, now=0.0)
        if batch is not None:
            closed.append(batch)
    assert [len(b.values) for b in closed] == [10, 10]
    ready, next_time = acc.ready(now=0.0)
    assert ready == [TP0] and next_time is None  # closed batches are due at once
    assert len(acc.pop(TP0).values) == 10 and len(acc.pop(TP0).values) == 10
    ready, next_time = acc.ready(now=0.0)  # the open one (5 records) waits for linger
    assert ready == [] and next_time == pytest.approx(1.0)
    assert acc.ready(now=1.0)[0] == [TP0]
    assert len(acc.pop(TP0).values) == 5 and acc.pop(TP0) is None


def test_oversized_record_gets_a_batch_of_its_own():
    acc = RecordAccumulator(batch_size=100, linger_ms=5)
    acc.append(TP0, b"small", None, 1, None, now=0.0)
    _, _, closed = acc.append(TP0, b"x" * 500, None, 1, None, now=0.0)
    assert [len(b.values) for b in acc._closed[TP0]] == [1, 1]
    assert closed.values == [b"x" * 500]


def test_flush_makes_every_open_batch_ready():
    acc = RecordAccumulator(batch_size=1 << 20, linger_ms=60_000)
    acc.append(TP0, b"a", None, 1, None, now=0.0)
    acc.append(TP1, b"b", None, 1, None, now=0.0)
    assert acc.ready(now=0.0)[0] == []
    acc.flushing += 1
    assert sorted(acc.ready(now=0.0)[0]) == [TP0, TP1]


def test_built_batch_holds_the_records_and_futures_get_base_plus_index():
    acc = RecordAccumulator(batch_size=1 << 20, linger_ms=0)
    futures = [acc.append(TP1, b"v%d" % i, b"k" if i % 2 else None, 500 + i,
                          [("h", b"x")] if i == 2 else None, now=0.0)[0] for i in range(4)]
    batch = acc.pop(TP1)
    built = batch.build(COMPRESSION_ZSTD)
    assert batch.build() is built  # built once; a retry resends the same bytes
    assert parse_header(built).compression == COMPRESSION_ZSTD
    records = list(iter_records(built))
    assert [(r.offset, r.key, r.value, r.create_time, r.headers) for r in records] == [
        (0, None, b"v0", 500, []), (1, b"k", b"v1", 501, []),
        (2, None, b"v2", 502, [("h", b"x")]), (3, b"k", b"v3", 503, [])]
    assert not futures[0].done()
    batch.complete(base_offset=40, log_append_time=9000)
    assert futures[3].get(0) == RecordMetadata("t", 1, 43, 9000, 503)
    assert asyncio.run(_await(futures[0])) == RecordMetadata("t", 1, 40, 9000, 500)


async def _await(future):
    return await future


def test_failed_batch_fails_every_record_future():
    acc = RecordAccumulator(batch_size=1 << 20, linger_ms=0)
    futures = [acc.append(TP0, b"v", None, 1, None, now=0.0)[0] for _ in range(3)]
    acc.pop(TP0).fail(RuntimeError("boom"))
    for future in futures:
        assert isinstance(future.exception(0), RuntimeError)
        with pytest.raises(RuntimeError):
            future.get(0)


def test_retried_batch_goes_back_to_the_head_and_waits_for_its_backoff():
    acc = RecordAccumulator(batch_size=RECORD_OVERHEAD_BYTES + 1, linger_ms=0)
    acc.append(TP0, b"1", None, 1, None, now=0.0)
    acc.append(TP0, b"2", None, 1, None, now=0.0)
    first = acc.pop(TP0)
    acc.reenqueue(first, retry_at=5.0)
    ready, next_time = acc.ready(now=1.0)
    assert ready == [] and next_time == 5.0  # batch 2 must not overtake batch 1
    assert acc.ready(now=5.0)[0] == [TP0] and acc.pop(TP0) is first


def test_batches_failing_together_are_retried_in_the_order_they_were_sent():
    """A connection lost with several batches of a partition in flight answers them in send
    order; each goes back behind the retries sent before it, ahead of unsent batches."""
    acc = RecordAccumulator(batch_size=RECORD_OVERHEAD_BYTES + 1, linger_ms=0)
    for value in (b"1", b"2", b"3", b"4"):
        acc.append(TP0, value, None, 1, None, now=0.0)
    sent = [acc.pop(TP0) for _ in range(3)]
    for batch in sent:
        batch.build()
    for batch in sent:
        acc.reenqueue(batch, retry_at=0.0)
    assert [acc.pop(TP0).values for _ in range(4)] == [[b"1"], [b"2"], [b"3"], [b"4"]]


def test_done_releases_buffered_bytes():
    acc = RecordAccumulator(batch_size=1 << 20, linger_ms=0)
    acc.append(TP0, b"x" * 100, b"key", 1, None, now=0.0)
    assert acc.buffered_bytes == 100 + 3 + RECORD_OVERHEAD_BYTES
    batch = acc.pop(TP0)
    with acc.lock:
        acc.done(batch)
    assert acc.buffered_bytes == 0 and not acc.incomplete


def test_many_open_batches_are_ready_by_their_own_linger_and_wake_the_sender_rarely():
    """Round-robin over many partitions: each record starts a batch. ``ready`` returns
    exactly the batches whose linger is up (a brute-force filter over all of them says
    which), and a new batch asks for a wake-up only when the sender's next look
    (``next_look``, recorded by ``ready``) would come after the batch is due."""
    acc = RecordAccumulator(batch_size=1 << 20, linger_ms=5)
    tps = [TopicPartition("t", p) for p in range(1000)]
    wakes = [acc.append(tp, b"v", None, 1, None, now=i / 10_000)[1] for i, tp in enumerate(tps)]
    # The sender has not looked yet: the first wakes it, and it looks at once (the next
    # ones need not: before, each of them woke it too).
    assert wakes == [True] + [False] * 999
    for now in (0.0049, 0.0051, 0.0300, 0.1049, 0.2000):
        due = [tp for i, tp in enumerate(tps) if i / 10_000 + 0.005 <= now]
        lingering = [i / 10_000 + 0.005 for i in range(1000) if i / 10_000 + 0.005 > now]
        ready, next_time = acc.ready(now)
        assert ready == due
        assert next_time == (lingering[0] if lingering else None)
        # Batches ready: the sender sends and looks again at once (LOOKING_NOW); none: it
        # looks when the first lingering batch is due.
        assert acc.next_look == (LOOKING_NOW if ready else next_time)
    acc.ready(0.0)  # the sender looked at 0: its next look is the first batch's linger end
    assert acc.append(TopicPartition("u", 0), b"v", None, 1, None, now=0.001)[1] is False
    assert acc.sleeping(0.005) is False  # that batch started after the look: look again
    acc.ready(0.0)
    assert acc.sleeping(0.005) is True
    acc.next_look = None  # a round that does not look (no producer id yet): a batch wakes it
    assert acc.append(TopicPartition("u", 1), b"v", None, 1, None, now=0.001)[1] is True
