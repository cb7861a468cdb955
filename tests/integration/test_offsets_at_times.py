"""OffsetsAtTimes against a real broker: many times of many partitions in one request give
exactly what a scan of the acknowledged records gives (hypothesis: times x partitions), and
what ListOffsets gives one time at a time; bad times get INVALID_REQUEST for that partition
only, and the broker keeps serving; a principal without Describe gets a denial and nothing
else."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire
from tslog.client import Admin, Producer, TopicPartition
from tslog.protocol.errors import ErrorCode
from tslog.protocol.int_columns import pack_int64, unpack_int64
from tslog.protocol.messages import ApiKey, decode_response

pytestmark = pytest.mark.timeout(300)

TOPIC = "times"
PARTITIONS = 3
BASE_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """A broker with records of shuffled CreateTimes whose LATs span a few rounds;
    [(partition, offset, LAT, CreateTime)] of every acknowledged record."""
    broker = BrokerProcess(tmp_path_factory.mktemp("times") / "broker",
                           config={"index_interval_bytes": 200}).start()
    records = []
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic(TOPIC, partitions=PARTITIONS)
        with Producer(broker.bootstrap, linger_ms=0) as producer:
            for round_number in range(6):
                for i in range(12):
                    partition = i % PARTITIONS
                    create = BASE_MS + ((i * 7919 + round_number * 104729) % 50_000)
                    meta = producer.send(TOPIC, b"x" * 40, partition=partition,
                                         timestamp_ms=create).get(10)
                    records.append((partition, meta.offset, meta.log_append_time, create))
                time.sleep(0.03)  # LATs over a few distinct milliseconds
        yield broker, records
    finally:
        broker.stop()


def _oracle(records, partition, column, target):
    found = next((r for r in sorted(records) if r[0] == partition and r[column] >= target),
                 None)
    return None if found is None else (found[1], found[column])


def _near(records, column):
    return sorted({r[column] + d for r in records for d in (-1, 0, 1)})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), timestamp_type=st.sampled_from(["append", "create"]))
def test_many_times_of_many_partitions_match_a_scan(loaded, data, timestamp_type):
    broker, records = loaded
    column = 2 if timestamp_type == "append" else 3
    near = _near(records, column)
    times = st.lists(st.sampled_from(near) | st.integers(0, near[-1] + 10), max_size=30)
    asked = {TopicPartition(TOPIC, p): data.draw(times, label=f"times of {p}")
             for p in data.draw(st.sets(st.integers(0, PARTITIONS - 1), min_size=1))}
    with Admin(broker.bootstrap) as admin:
        answers = admin.offsets_at_times(asked, timestamp_type)
        for tp, ts in asked.items():
            got = [tuple(a) if a is not None else None for a in answers[tp]]
            assert got == [_oracle(records, tp.partition, column, t) for t in ts]
            one_by_one = [admin.list_offsets({tp: t}, timestamp_type)[tp] for t in ts[:5]]
            assert answers[tp][:5] == one_by_one


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), timestamp_type=st.sampled_from(["append", "create"]))
def test_offset_columns_give_the_scans_offsets_in_the_order_asked(loaded, data,
                                                                  timestamp_type):
    """Admin.offset_columns: the same times in every partition asked (sorted or not,
    repeats included), -1 where no record is that late."""
    broker, records = loaded
    column = 2 if timestamp_type == "append" else 3
    near = _near(records, column)
    times = data.draw(st.lists(st.sampled_from(near) | st.integers(0, near[-1] + 10),
                               max_size=30), label="times")
    partitions = sorted(data.draw(st.sets(st.integers(0, PARTITIONS - 1), min_size=1)))
    with Admin(broker.bootstrap) as admin:
        columns = admin.offset_columns([TopicPartition(TOPIC, p) for p in partitions], times,
                                       timestamp_type)
    assert columns == {TopicPartition(TOPIC, p): [
        (_oracle(records, p, column, t) or (-1,))[0] for t in times] for p in partitions}


def test_bad_times_are_refused_per_partition_and_the_broker_keeps_serving(loaded):
    broker, records = loaded
    host, port = broker.bootstrap.split(":")
    bad = [[5, 3], [-1, 4], list(range(2049))]
    with Wire(host, int(port)) as wire:
        body = wire.request(ApiKey.OFFSETS_AT_TIMES, {"timestamp_type": "append", "topics": [
            {"topic": TOPIC, "partitions": [{"partition": 0, "timestamps": times}
                                            for times in bad]
             + [{"partition": 1, "timestamps": [0]}, {"partition": 99, "timestamps": [0]}]}]})
    answers = body["topics"][0]["partitions"]
    assert [a["error_code"] for a in answers] == [ErrorCode.INVALID_REQUEST] * 3 + [
        0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert answers[0]["offsets"] == [] and answers[0]["timestamps"] == []
    first = min(r for r in records if r[0] == 1)
    assert answers[3]["offsets"] == [first[1]] and answers[3]["timestamps"] == [first[2]]
    with Admin(broker.bootstrap) as admin:
        assert admin.list_offsets({TopicPartition(TOPIC, 0): -1})[TopicPartition(TOPIC, 0)]
        with pytest.raises(ValueError):
            admin.offsets_at_times({TopicPartition(TOPIC, 0): [-5]})
        with pytest.raises(ValueError):
            admin.offset_columns([TopicPartition(TOPIC, 0)], [-5])


def test_log_append_times_come_from_batch_headers_small_and_large(loaded):
    """Admin.log_append_times: the LogAppendTime of the record at each offset, inside a
    batch far larger than the per-partition limit the request asks for too; an offset at the
    log end has none."""
    broker, records = loaded
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("wide", partitions=2)
        with Producer(broker.bootstrap, linger_ms=0) as producer:
            big = producer.send_batch("wide", [os.urandom(1000) for _ in range(20)],
                                     partition=0).get(10)
            small = producer.send("wide", b"z", partition=1).get(10)
        got = admin.log_append_times({TopicPartition(TOPIC, 0): 0,
                                      TopicPartition("wide", 0): big[7].offset,
                                      TopicPartition("wide", 1): small.offset + 1})
        assert got == {TopicPartition("wide", 0): big[7].log_append_time,
                       TopicPartition("wide", 1): None,  # the log end: no record yet
                       TopicPartition(TOPIC, 0): min(r for r in records if r[0] == 0)[2]}
        for p, offset, lat, _ in records:
            one = admin.log_append_times({TopicPartition(TOPIC, p): offset})
            assert one == {TopicPartition(TOPIC, p): lat}


def _version_1(wire: Wire, body: dict) -> dict:
    wire.send(ApiKey.OFFSETS_AT_TIMES, body, version=1)
    frame = wire.read_frame()
    assert frame is not None, "broker closed the connection"
    return decode_response(frame, ApiKey.OFFSETS_AT_TIMES, 1)[1]


def test_version_1_says_the_times_once_and_packs_the_same_offsets(loaded):
    """The same times for every partition (a chart): the answer's packed int64 offsets are
    version 0's offsets, byte for byte; bad times and an unknown partition are refused per
    partition, as in version 0."""
    broker, records = loaded
    host, port = broker.bootstrap.split(":")
    times = [0, *_near(records, 2)[::3], BASE_MS * 2]
    with Wire(host, int(port)) as wire:
        old = wire.request(ApiKey.OFFSETS_AT_TIMES, {"timestamp_type": "append", "topics": [
            {"topic": TOPIC, "partitions": [{"partition": p, "timestamps": times}
                                            for p in range(PARTITIONS)]}]})
        new = _version_1(wire, {"timestamp_type": "append", "timestamps": times, "topics": [
            {"topic": TOPIC, "partitions": [*range(PARTITIONS), 99]}]})
        unsorted = _version_1(wire, {"timestamp_type": "append", "timestamps": [5, 3],
                                     "topics": [{"topic": TOPIC, "partitions": [0]}]})
    expected = [pack_int64(answer["offsets"]) for answer in old["topics"][0]["partitions"]]
    answers = new["topics"][0]["partitions"]
    assert [a["offsets"] for a in answers[:PARTITIONS]] == expected
    assert {a["error_code"] for a in answers[:PARTITIONS]} == {0}
    assert answers[-1]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answers[-1]["offsets"] == b""
    assert -1 in unpack_int64(answers[0]["offsets"])  # the time past every record
    refused = unsorted["topics"][0]["partitions"][0]
    assert refused["error_code"] == ErrorCode.INVALID_REQUEST and refused["offsets"] == b""
