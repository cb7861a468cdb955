"""The bad-input suite of issue 20: one real broker, many kinds of hostile input, and after each
the same check: the broker process is alive, a fresh normal client produces a record and reads
it back, and every record acknowledged before the cases is read back exactly (offsets and values).

Method: one ``tslog-broker`` process for the whole module. Before the cases a real Producer
(acks=all) writes a known set of records to ``held`` (two partitions) and the test keeps each
acknowledged (offset, value). Each case sends one kind of bad input over a raw socket
(``tests.helpers.wire``, ``tests.helpers.batches``) and asserts what the broker answered: a typed
error code, or the connection closed. Categories: framing, msgpack, schema, names, configs,
mutated batches, a never-reading client, a slow client.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time

import msgpack
import pytest

from tests.helpers.batches import issue_lie, zstd_flag_over_plain_bytes
from tests.helpers.broker_process import BrokerProcess
from tests.helpers.liveness import assert_serves_a_normal_client
from tests.helpers.wire import Wire, batch, raw_frame, split_values
from tslog.client import Admin, Producer
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey, RequestHeader, encode_request

pytestmark = pytest.mark.timeout(120)  # about 7 s here: not marked slow

HELD = "held"
SCRATCH = "scratch"  # cases that must succeed (the slow client) write here, never to HELD
PARTITIONS = 2
PER_PARTITION = 40
VALUE = b"v" * 2000


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """(broker, {(topic, partition): [(offset, value), ...] acknowledged before the cases})."""
    broker = BrokerProcess(tmp_path_factory.mktemp("hostile") / "broker").start()
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic(HELD, partitions=PARTITIONS)
            admin.create_topic(SCRATCH)
        held: dict[tuple[str, int], list[tuple[int, bytes]]] = {}
        with Producer(broker.bootstrap, acks="all", linger_ms=1) as producer:
            futures = []
            for partition in range(PARTITIONS):
                for i in range(PER_PARTITION):
                    value = b"%d-%d-" % (partition, i) + VALUE
                    futures.append((value, producer.send(HELD, value, partition=partition)))
            producer.flush()
            for value, future in futures:
                meta = future.get(10)
                held.setdefault((HELD, meta.partition), []).append((meta.offset, value))
        for key in held:
            assert [offset for offset, _ in held[key]] == list(range(PER_PARTITION)), key
        yield broker, held
    finally:
        broker.cleanup()


def read_all(wire: Wire, topic: str, partition: int) -> list[tuple[int, bytes]]:
    end = wire.log_end_offset(topic, partition)
    out: list[tuple[int, bytes]] = []
    offset = 0
    while offset < end:
        answer = wire.fetch(topic, partition, offset)
        assert answer["error_code"] == 0, answer
        got = split_values(answer["records"])
        assert got, (topic, partition, offset)
        out.extend(got)
        offset = got[-1][0] + 1
    return out


def assert_after_case(broker: BrokerProcess, held) -> None:
    assert broker.process.poll() is None, broker.log_text()[-3000:]
    with Wire(broker.host, broker.port) as wire:
        assert wire.api_versions()["error_code"] == 0
        for (topic, partition), records in held.items():
            assert read_all(wire, topic, partition) == records, (topic, partition)
    assert_serves_a_normal_client(broker)


# -- helpers for cases -------------------------------------------------------------------------

def raw_request(api_key, body, correlation_id: int = 7, version: int = 0) -> bytes:
    return raw_frame(msgpack.packb([int(api_key), version, correlation_id, "hostile", body]))


def expect_closed(broker, data: bytes) -> None:
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(data)
        assert wire.is_closed_by_peer()


def expect_invalid_request(broker, api_key, body) -> None:
    """A typed INVALID_REQUEST answer on the same connection, which keeps working."""
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(raw_request(api_key, body, correlation_id=44))
        correlation_id, response = wire.receive(api_key)
        assert correlation_id == 44
        assert response["error_code"] == ErrorCode.INVALID_REQUEST, response
        assert wire.api_versions()["error_code"] == 0


def create_topics_code(broker, topic, configs=None) -> int:
    with Wire(broker.host, broker.port) as wire:
        return wire.create_topic(topic, configs=configs)


def produce_code(broker, topic, records) -> int:
    with Wire(broker.host, broker.port) as wire:
        return wire.produce(topic, 0, records)["error_code"]


def produce_body(topic=HELD, partition=0, records=None, **over):
    body = {"acks": -1, "timeout_ms": 1000, "topics": [{"topic": topic, "partitions": [
        {"partition": partition, "records": batch([b"bad"]) if records is None else records}]}]}
    body.update(over)
    return body


def fetch_body(**partition_over):
    entry = {"partition": 0, "fetch_offset": 0, "max_bytes": 1 << 20}
    entry.update(partition_over)
    entry = {k: v for k, v in entry.items() if v is not MISSING}
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": HELD, "partitions": [entry]}]}


def list_offsets_body(**partition_over):
    entry = {"partition": 0, "timestamp": -1}
    entry.update(partition_over)
    entry = {k: v for k, v in entry.items() if v is not MISSING}
    return {"replica_id": -1, "timestamp_type": "append",
            "topics": [{"topic": HELD, "partitions": [entry]}]}


def create_body(**topic_over):
    entry = {"topic": "schema-bad", "partitions": 1, "replication_factor": 1, "configs": {}}
    entry.update(topic_over)
    entry = {k: v for k, v in entry.items() if v is not MISSING}
    return {"topics": [entry], "timeout_ms": 10_000}


MISSING = object()

# -- the cases ---------------------------------------------------------------------------------


def garbage_bytes(broker):
    expect_closed(broker, raw_frame(b"\xc1\xc1 garbage, not msgpack \x00\xff" * 4))


def unframed_garbage(broker):
    expect_closed(broker, b"\xff\xff\xff\xfe" + b"\xde\xad\xbe\xef" * 64)


def length_over_max(broker):
    with Wire(broker.host, broker.port) as wire:
        wire.send_raw(struct.pack(">I", 0x7FFFFFFF) + b"\x00" * 1000)
        assert wire.is_closed_by_peer()


def frame_cut_by_disconnect(broker):
    frame = raw_request(ApiKey.PRODUCE, produce_body(records=batch([b"half"])))
    sock = socket.create_connection((broker.host, broker.port))
    sock.sendall(frame[: len(frame) // 2])
    sock.close()
    time.sleep(0.2)


def msgpack_undecodable(broker):
    expect_closed(broker, raw_frame(b"\x95\x00\x00\x01\xa3ab"))  # array of 5, truncated


def msgpack_envelope_not_array(broker):
    expect_closed(broker, raw_frame(msgpack.packb({"api_key": 0})))


def msgpack_envelope_wrong_types(broker):
    expect_closed(broker, raw_frame(msgpack.packb(["zero", 0.5, "one", 3, b"x"])))


def msgpack_envelope_body_not_map(broker):
    expect_closed(broker, raw_frame(msgpack.packb([int(ApiKey.PRODUCE), 0, 1, "x", [1, 2]])))


SCHEMA = {
    "produce-acks-str": (ApiKey.PRODUCE, produce_body(acks="all")),
    "produce-partition-str": (ApiKey.PRODUCE, produce_body(partition="0")),
    "produce-records-str": (ApiKey.PRODUCE, produce_body(records="not bin")),
    "produce-missing-timeout": (ApiKey.PRODUCE, {"acks": -1, "topics": []}),
    "fetch-offset-str": (ApiKey.FETCH, fetch_body(fetch_offset="0")),
    "fetch-missing-offset": (ApiKey.FETCH, fetch_body(fetch_offset=MISSING)),
    "fetch-max-bytes-float": (ApiKey.FETCH, fetch_body(max_bytes=1.5)),
    "list-offsets-timestamp-str": (ApiKey.LIST_OFFSETS, list_offsets_body(timestamp="latest")),
    "list-offsets-missing-partition": (ApiKey.LIST_OFFSETS, list_offsets_body(partition=MISSING)),
    "create-partitions-str": (ApiKey.CREATE_TOPICS, create_body(partitions="1")),
    "create-missing-topic": (ApiKey.CREATE_TOPICS, create_body(topic=MISSING)),
    "create-configs-list": (ApiKey.CREATE_TOPICS, create_body(configs=["a", "b"])),
}


def schema_case(name):
    api_key, body = SCHEMA[name]
    return lambda broker: expect_invalid_request(broker, api_key, body)


BAD_NAMES = {"empty": "", "long-250": "n" * 250, "slash": "a/b", "space-nul": "a b\x00",
             "dot": ".", "dotdot": ".."}


def disk_entries(broker) -> tuple[set[str], set[str]]:
    """What the data directory and its parent hold ('..' must not escape either)."""
    return (set(os.listdir(broker.data_dir)), set(os.listdir(broker.data_dir.parent)))


def create_bad_name(name):
    def case(broker):
        before = disk_entries(broker)
        assert create_topics_code(broker, BAD_NAMES[name]) == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert disk_entries(broker) == before
        with Admin(broker.bootstrap) as admin:
            assert BAD_NAMES[name] not in admin.list_topics()
    return case


def produce_bad_name(name):
    def case(broker):
        before = disk_entries(broker)
        assert (produce_code(broker, BAD_NAMES[name], batch([b"x"]))
                == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        assert disk_entries(broker) == before
    return case


BAD_CONFIGS = {
    "segment.index.bytes-2^40": {"segment.index.bytes": str(2**40)},
    "retention.ms-100-digits": {"retention.ms": "9" * 100},
    "retention.ms-not-integer": {"retention.ms": "1.5e3"},
    "segment.bytes-word": {"segment.bytes": "lots"},
}


def bad_config(name):
    def case(broker):
        assert create_topics_code(broker, "cfg-bad", BAD_CONFIGS[name]) == ErrorCode.INVALID_CONFIG
        with Admin(broker.bootstrap) as admin:
            assert "cfg-bad" not in admin.list_topics()
    return case


def mutated(make):
    def case(broker):
        with Wire(broker.host, broker.port) as wire:
            answer = wire.produce(HELD, 0, make())
            assert answer["error_code"] == ErrorCode.CORRUPT_MESSAGE, answer
            assert wire.log_end_offset(HELD, 0) == PER_PARTITION
    return case


def never_reading_client(broker):
    """500 pipelined ~80 KiB Fetches on one connection that never reads; meanwhile a normal
    connection is served."""
    frames = b"".join(
        encode_request(RequestHeader(ApiKey.FETCH, 0, i, "hostile"), fetch_body())
        for i in range(1, 501))
    sock = socket.create_connection((broker.host, broker.port))

    def send():
        try:
            sock.sendall(frames)
        except OSError:
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        time.sleep(1.0)
        with Wire(broker.host, broker.port) as wire:
            assert wire.fetch(HELD, 0, 0)["error_code"] == 0
        assert broker.process.poll() is None
    finally:
        sock.close()
        sender.join(5)


def slow_client(broker):
    """A Produce frame sent one byte at a time with pauses, then answered normally."""
    frame = encode_request(RequestHeader(ApiKey.PRODUCE, 0, 9, "slow"),
                           produce_body(topic=SCRATCH, records=batch([b"slowly"])))
    with Wire(broker.host, broker.port) as wire:
        for i in range(len(frame)):
            wire.send_raw(frame[i:i + 1])
            time.sleep(0.004)
        correlation_id, response = wire.receive(ApiKey.PRODUCE)
        assert correlation_id == 9
        assert response["topics"][0]["partitions"][0]["error_code"] == 0


def slow_then_gone(broker):
    """Half a frame trickled in, then the client vanishes: nothing written."""
    frame = raw_request(ApiKey.PRODUCE, produce_body(records=batch([b"trickle"])))
    sock = socket.create_connection((broker.host, broker.port))
    for i in range(len(frame) // 2):
        sock.sendall(frame[i:i + 1])
        time.sleep(0.004)
    sock.close()
    time.sleep(0.2)


CASES = {
    "framing-garbage-bytes": garbage_bytes,
    "framing-unframed-garbage": unframed_garbage,
    "framing-length-over-max": length_over_max,
    "framing-cut-by-disconnect": frame_cut_by_disconnect,
    "msgpack-undecodable": msgpack_undecodable,
    "msgpack-envelope-not-array": msgpack_envelope_not_array,
    "msgpack-envelope-wrong-types": msgpack_envelope_wrong_types,
    "msgpack-body-not-map": msgpack_envelope_body_not_map,
    **{f"schema-{name}": schema_case(name) for name in SCHEMA},
    **{f"names-create-{name}": create_bad_name(name) for name in BAD_NAMES},
    **{f"names-produce-{name}": produce_bad_name(name) for name in BAD_NAMES},
    **{f"configs-{name}": bad_config(name) for name in BAD_CONFIGS},
    "batch-record-count-2^31-1": mutated(issue_lie),
    "batch-zstd-flag-over-plain": mutated(zstd_flag_over_plain_bytes),
    "client-never-reads": never_reading_client,
    "client-slow-byte-by-byte": slow_client,
    "client-slow-then-gone": slow_then_gone,
}


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_input_leaves_the_broker_whole(world, name):
    broker, held = world
    CASES[name](broker)
    assert_after_case(broker, held)
    assert "Traceback" not in broker.log_text()
