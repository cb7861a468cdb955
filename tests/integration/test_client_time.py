"""Searching the log by time from the client: exactly the records at or after T come back.

Goal: the product's promise. Method: produce many small batches (linger 0, one flush each)
so the broker stamps several distinct LogAppendTimes; remember each record's LAT and
CreateTime from its RecordMetadata; then for several T compare what offsets_for_times and
seek_to_timestamp + poll give against the set computed from that metadata. The broker's
clock is not touched: real time passes between flushes, and we only use LATs we observed.
"""

from __future__ import annotations

import collections
import time

import pytest

from tslog.client import Admin, Consumer, OffsetAndTimestamp, Producer, TopicPartition
from tslog.client.blocking import BrokerSocket
from tslog.protocol.messages import ApiKey

PARTITIONS = 3


@pytest.fixture
def timeline(broker):
    """Produce until at least 6 distinct LATs exist; returns the list of RecordMetadata."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("timed", partitions=PARTITIONS)
    base_create = int(time.time() * 1000) - 60_000
    metadata = []
    with Producer(broker.bootstrap, linger_ms=0) as producer:
        i = 0
        deadline = time.monotonic() + 20
        while len({m.log_append_time for m in metadata}) < 6 and time.monotonic() < deadline:
            futures = [producer.send("timed", b"%d" % (i + j), partition=(i + j) % PARTITIONS,
                                     timestamp_ms=base_create + 10 * (i + j)) for j in range(9)]
            producer.flush()
            metadata += [f.get(10) for f in futures]
            i += 9
    assert len({m.log_append_time for m in metadata}) >= 6
    return metadata


def expected_after(metadata, t, field="log_append_time"):
    """{tp: sorted offsets of records with time >= t}."""
    result = collections.defaultdict(list)
    for m in metadata:
        if getattr(m, field) >= t:
            result[TopicPartition(m.topic, m.partition)].append(m.offset)
    return {tp: sorted(offsets) for tp, offsets in result.items()}


def read_to_end(consumer, total_by_tp):
    """Poll until each partition's position reaches its end offset."""
    records = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if all(consumer.position(tp) >= end for tp, end in total_by_tp.items()):
            break
        records += consumer.poll(200)
    return records


def test_offsets_for_times_is_exact_in_every_partition(broker, timeline):
    lats = sorted({m.log_append_time for m in timeline})
    tps = [TopicPartition("timed", p) for p in range(PARTITIONS)]
    with Consumer(broker.bootstrap) as consumer:
        for t in [lats[0] - 1, lats[0], lats[2], lats[2] + 1, lats[-1], lats[-1] + 1]:
            found = consumer.offsets_for_times({tp: t for tp in tps})
            expected = expected_after(timeline, t)
            for tp in tps:
                if tp not in expected:
                    assert found[tp] is None
                    continue
                first = expected[tp][0]
                lat = next(m.log_append_time for m in timeline
                           if (m.partition, m.offset) == (tp.partition, first))
                assert found[tp] == OffsetAndTimestamp(first, lat), (t, tp)


def test_seek_to_timestamp_returns_exactly_the_records_at_or_after_t(broker, timeline):
    lats = sorted({m.log_append_time for m in timeline})
    tps = [TopicPartition("timed", p) for p in range(PARTITIONS)]
    ends = {tp: 1 + max(m.offset for m in timeline if m.partition == tp.partition) for tp in tps}
    for t in (lats[1], lats[3] + 1, lats[-1]):
        with Consumer(broker.bootstrap) as consumer:
            consumer.assign(tps)
            consumer.seek_to_timestamp(t)
            records = read_to_end(consumer, ends)
        got = collections.defaultdict(list)
        for record in records:
            assert record.log_append_time >= t
            got[TopicPartition(record.topic, record.partition)].append(record.offset)
        assert dict(got) == expected_after(timeline, t)


def test_seek_to_create_time(broker, timeline):
    create_times = sorted(m.create_time for m in timeline)
    t = create_times[len(create_times) // 2]
    tps = [TopicPartition("timed", p) for p in range(PARTITIONS)]
    ends = {tp: 1 + max(m.offset for m in timeline if m.partition == tp.partition) for tp in tps}
    with Consumer(broker.bootstrap) as consumer:
        consumer.assign(tps)
        consumer.seek_to_timestamp(t, timestamp_type="create")
        records = read_to_end(consumer, ends)
    got = collections.defaultdict(list)
    for record in records:
        got[TopicPartition(record.topic, record.partition)].append(record.offset)
    assert dict(got) == expected_after(timeline, t, "create_time")


def test_seek_past_the_last_record_waits_for_new_ones(broker, timeline):
    after = max(m.log_append_time for m in timeline) + 1
    tp = TopicPartition("timed", 0)
    with Consumer(broker.bootstrap) as consumer:
        consumer.assign([tp])
        assert consumer.offsets_for_times({tp: after}) == {tp: None}
        consumer.seek_to_timestamp(after)
        end = consumer.end_offsets([tp])[tp]
        assert consumer.position(tp) == end
        assert consumer.poll(100) == []
        with Producer(broker.bootstrap) as producer:
            producer.send("timed", b"new", partition=0).get(10)
        records = []
        deadline = time.monotonic() + 10
        while not records and time.monotonic() < deadline:
            records = consumer.poll(200)
        assert [(r.offset, r.value) for r in records] == [(end, b"new")]


def test_sync_lookups_stay_exact_across_a_broker_restart_and_name_a_bad_partition(
        broker, timeline):
    """The blocking facade answers lookups on its own connection to the leader; a broker
    restart breaks that connection, and the next lookup must still be exact (and answered),
    while a partition that does not exist still raises the typed error."""
    from tslog.client.errors import TslogError

    middle = sorted({m.log_append_time for m in timeline})[3]
    tps = [TopicPartition("timed", p) for p in range(PARTITIONS)]
    expected = {tp: offsets[0] for tp, offsets in expected_after(timeline, middle).items()}
    with Consumer(broker.bootstrap) as consumer:
        for _ in range(3):  # the same answers again and again on the direct connection
            found = consumer.offsets_for_times({tp: middle for tp in tps})
            assert {tp: f.offset for tp, f in found.items() if f} == expected
        broker.restart()
        found = consumer.offsets_for_times({tp: middle for tp in tps})
        assert {tp: f.offset for tp, f in found.items() if f} == expected
        assert consumer.offsets_for_times({tps[0]: 2**62}) == {tps[0]: None}
        with pytest.raises(TslogError):
            consumer.offsets_for_times({TopicPartition("timed", PARTITIONS): middle})


def test_a_blocking_connection_gives_each_pipelined_request_its_own_answer(broker, timeline):
    """The blocking connection (the sync facade's lookups, Spark's reads) may have several
    requests in flight; their small answers arrive together and each must be matched to its
    own request, in order."""
    host, port = broker.bootstrap.rsplit(":", 1)
    times = sorted({m.log_append_time for m in timeline}) * 20
    expected = [(p, expected_after(timeline, t).get(TopicPartition("timed", p), [-1])[0])
                for t in times for p in range(PARTITIONS)]
    connection = BrokerSocket(host, int(port), 10.0)
    try:
        for t in times:
            connection.send(ApiKey.LIST_OFFSETS, {
                "replica_id": -1, "timestamp_type": "append", "topics": [{
                    "topic": "timed",
                    "partitions": [{"partition": p, "timestamp": t} for p in range(PARTITIONS)]}]})
        answers = [part for _ in times
                   for part in connection.receive()["topics"][0]["partitions"]]
    finally:
        connection.close()
    assert [(a["partition"], a["offset"]) for a in answers] == expected
