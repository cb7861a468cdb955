"""Random seeks and polls against a model: nothing from before a seek ever leaks out.

Goal: the consumer fetches ahead (pipelining) and drops what a seek made stale; a bug there
shows up as a record at the wrong offset. Method: one broker and one fixed log per module;
hypothesis drives sequences of seek / poll(max_records) on a real Consumer, and every record
returned must be exactly the next one the model expects for its partition.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.broker_process import BrokerProcess
from tslog.client import Admin, Consumer, Producer, TopicPartition

COUNTS = {0: 300, 1: 40}
TPS = [TopicPartition("model", p) for p in COUNTS]


@pytest.fixture(scope="module")
def model_broker(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("seek-model") / "broker").start()
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic("model", partitions=len(COUNTS))
        with Producer(broker.bootstrap, linger_ms=1, batch_size=2048) as producer:
            for partition, count in COUNTS.items():
                for offset in range(count):
                    producer.send("model", b"%d-%d" % (partition, offset), partition=partition)
            producer.flush()
        yield broker
    finally:
        broker.cleanup()


seek = st.sampled_from(list(COUNTS)).flatmap(
    lambda p: st.tuples(st.just("seek"), st.just(p), st.integers(0, COUNTS[p])))
operation = st.one_of(seek, st.tuples(st.just("poll"), st.integers(1, 120)))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operation, min_size=1, max_size=12))
def test_seek_and_poll_match_the_model(model_broker, operations):
    positions = {p: 0 for p in COUNTS}
    with Consumer(model_broker.bootstrap, fetch_max_wait_ms=50,
                  max_partition_fetch_bytes=4096) as consumer:
        consumer.assign(TPS)
        for tp in TPS:
            consumer.seek(tp, 0)
        for op in operations:
            if op[0] == "seek":
                _, partition, offset = op
                consumer.seek(TopicPartition("model", partition), offset)
                positions[partition] = offset
                continue
            wanted = sum(max(0, COUNTS[p] - positions[p]) for p in COUNTS)
            records = []
            deadline = time.monotonic() + 10
            while not records and wanted and time.monotonic() < deadline:
                records = consumer.poll(100, max_records=op[1])
            assert len(records) <= op[1]
            assert bool(records) == bool(wanted)
            for record in records:
                assert record.offset == positions[record.partition], (op, record)
                assert record.value == b"%d-%d" % (record.partition, record.offset)
                positions[record.partition] += 1
        for tp in TPS:
            assert consumer.position(tp) == positions[tp.partition]


def test_a_position_past_the_end_is_reset_by_the_policy(model_broker):
    tp = TPS[1]
    for policy in ("latest", "earliest"):
        with Consumer(model_broker.bootstrap, auto_offset_reset=policy) as consumer:
            consumer.assign([tp])
            consumer.seek(tp, COUNTS[1] + 5)
            records = []
            deadline = time.monotonic() + 10
            while consumer.position(tp) == COUNTS[1] + 5 and time.monotonic() < deadline:
                records += consumer.poll(50)
            if policy == "latest":
                assert consumer.position(tp) == COUNTS[1] and records == []
            else:
                records += consumer.poll(500)
                assert records and records[0].offset == 0
