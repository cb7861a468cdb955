"""Kafka listener rows: confluent-kafka (librdkafka) producing and consuming through the
broker's Kafka port, beside the native raw path measured in the same run (pre-encoded tslog
batches of 1000 pipelined on one connection; a Fetch loop that decodes batch headers only).

The confluent-kafka rows include what the native raw rows leave out on purpose: librdkafka
building (or reading) every record through its Python API, one call or ``Message`` per record,
and the listener converting each batch between Kafka's format and tslog's
(``tslog.protocol.kafka.convert``). The "raw Kafka" rows do on the Kafka port exactly what the
native raw rows do on tslog's (pre-encoded RecordBatch v2 of 1000 records pipelined; a Fetch
loop reading batch headers only), so they measure the listener itself: its framing, codec and
conversions. The target, >= 0.5x of the native raw path, is printed beside the figures, never
asserted. Skipped with a message when confluent-kafka is
not installed (``pip install -e '.[dev]'``).

What the listener cannot fix is printed beside it: a "client alone" row, confluent-kafka's
``produce()`` calls and ``produce_batch`` records per second into a Producer whose bootstrap
answers nothing (so nothing leaves librdkafka's queue: the client's own ceiling), and for
the confluent-kafka consume runs the CPU seconds of this process (librdkafka's threads and
the Python loop over ``Message`` objects) against the broker process's, from ``/proc``."""

from __future__ import annotations

import importlib.util
import os
import socket
import struct
import time

from .common import BATCH_RECORDS, VALUE, connect, create_topic, median, print_table, spread
from .consume import fetch_raw
from .context import Setup
from .produce import produce_raw


def _kafka_socket(kafka_port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", kafka_port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _read_frame(sock: socket.socket) -> bytes:
    head = _read_exact(sock, 4)
    return _read_exact(sock, struct.unpack(">I", head)[0])


def _read_exact(sock: socket.socket, count: int) -> bytes:
    buffer = bytearray(count)
    view, got = memoryview(buffer), 0
    while got < count:
        n = sock.recv_into(view[got:])
        if not n:
            raise RuntimeError("the Kafka listener closed the connection")
        got += n
    return bytes(buffer)


def _raw_kafka_produce(kafka_port: int, topic: str, batches: int, window: int) -> float:
    """Produce v9 (acks=1) of ``batches`` copies of one pre-built 1000-record RecordBatch v2,
    ``window`` in flight, like ``produce_raw`` on the native port. Seconds."""
    from tslog.protocol.kafka import decode_response, encode_request
    from tslog.protocol.kafka.record_batch import encode_batch

    now = int(time.time() * 1000)
    batch = encode_batch([VALUE] * BATCH_RECORDS, [None] * BATCH_RECORDS,
                         [now] * BATCH_RECORDS)
    frames = []
    for n in range(batches):
        data = encode_request(0, 9, n, "bench", {"acks": 1, "timeout_ms": 30_000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})
        frames.append(struct.pack(">I", len(data)) + data)
    with _kafka_socket(kafka_port) as sock:
        sent = answered = 0
        started = time.perf_counter()
        while sent < min(window, batches):
            sock.sendall(frames[sent])
            sent += 1
        while answered < batches:
            _, body = decode_response(0, 9, _read_frame(sock))
            code = body["responses"][0]["partition_responses"][0]["error_code"]
            if code:
                raise RuntimeError(f"Kafka produce to {topic} failed: error {code}")
            answered += 1
            if sent < batches:
                sock.sendall(frames[sent])
                sent += 1
        return time.perf_counter() - started


def _raw_kafka_fetch(kafka_port: int, topic: str, end_offset: int, max_bytes: int) -> float:
    """Fetch v12 loop from offset 0 to ``end_offset``, one request in flight, reading batch
    headers only, like ``fetch_raw`` on the native port. Seconds."""
    from tslog.protocol.kafka import decode_response, encode_request
    from tslog.protocol.kafka.record_batch import split_batches

    offset = 0
    with _kafka_socket(kafka_port) as sock:
        started = time.perf_counter()
        while offset < end_offset:
            data = encode_request(1, 12, offset, "bench", {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
                "isolation_level": 0, "topics": [{"topic": topic, "partitions": [
                    {"partition": 0, "fetch_offset": offset,
                     "partition_max_bytes": max_bytes}]}]})
            sock.sendall(struct.pack(">I", len(data)) + data)
            _, body = decode_response(1, 12, _read_frame(sock))
            part = body["responses"][0]["partitions"][0]
            if part["error_code"] or not part["records"]:
                raise RuntimeError(f"Kafka fetch at {offset}: error {part['error_code']}")
            last = split_batches(part["records"], allow_partial_tail=True)[-1]
            base_offset, = struct.unpack_from(">q", last, 0)
            last_delta, = struct.unpack_from(">i", last, 23)
            offset = base_offset + last_delta + 1
        return time.perf_counter() - started


def _confluent_produce(kafka: str, topic: str, records: int) -> float:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka, "acks": 1, "linger.ms": 5,
                         "batch.num.messages": BATCH_RECORDS, "batch.size": 1 << 20,
                         "queue.buffering.max.messages": records + 1})
    producer.produce(topic, VALUE, partition=0)  # connected and warm before the clock
    producer.flush(30)
    produce = producer.produce
    started = time.perf_counter()
    for _ in range(records):
        produce(topic, VALUE, partition=0)
    if producer.flush(120):
        raise RuntimeError("confluent-kafka did not deliver every record")
    return time.perf_counter() - started


def _client_alone(records: int) -> tuple[float, float]:
    """(``produce()`` calls/s, ``produce_batch`` records/s) of confluent-kafka with no broker
    to talk to: the bootstrap is a closed port, so every record stays in librdkafka's queue
    and only the client's Python API and queueing are measured."""
    from confluent_kafka import Producer

    from tests.helpers.broker_process import free_port

    def producer():
        return Producer({"bootstrap.servers": f"127.0.0.1:{free_port()}", "linger.ms": 5,
                         "batch.num.messages": BATCH_RECORDS, "log_level": 0,
                         "queue.buffering.max.messages": records + 1,
                         "queue.buffering.max.kbytes": 1 << 21})

    alone = producer()
    produce = alone.produce
    started = time.perf_counter()
    for _ in range(records):
        produce("alone", VALUE, partition=0)
    calls = records / (time.perf_counter() - started)
    alone.purge()
    alone = producer()
    batch = [{"value": VALUE}] * BATCH_RECORDS
    started = time.perf_counter()
    for _ in range(records // BATCH_RECORDS):
        alone.produce_batch("alone", batch, partition=0)
    batched = records // BATCH_RECORDS * BATCH_RECORDS / (time.perf_counter() - started)
    alone.purge()
    return calls, batched


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _confluent_consume(kafka: str, topic: str, records: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "bench",
                         "enable.auto.commit": False, "fetch.max.bytes": 8 << 20,
                         "max.partition.fetch.bytes": 8 << 20,
                         # librdkafka's pause when its queue is full (default 1000 ms): a
                         # broker that outruns the Python loop would be timed by it
                         "fetch.queue.backoff.ms": 10})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        count = 0
        started = time.perf_counter()
        deadline = started + 120
        while count < records and time.perf_counter() < deadline:
            for message in consumer.consume(BATCH_RECORDS, 1.0):
                if message.error() is None:
                    count += 1
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    if count < records:
        raise RuntimeError(f"confluent-kafka read {count} of {records} records")
    return elapsed


def section_kafka(setup: Setup) -> None:
    if importlib.util.find_spec("confluent_kafka") is None:
        print("\n  Kafka listener rows SKIPPED: confluent-kafka is not installed")
        return
    broker, kafka = setup.broker, f"127.0.0.1:{setup.kafka_port}"
    batches = setup.produce_batches
    records = batches * BATCH_RECORDS
    paths = {"native": "tslog raw, native port", "raw": "raw Kafka, Kafka listener",
             "kafka": "confluent-kafka, Kafka listener"}
    rates: dict[str, list[float]] = {f"{path} {what}": [] for path in paths
                                     for what in ("produce", "consume")}
    alone_calls, alone_batched, client_cpu, broker_cpu = [], [], [], []
    for run in range(setup.runs):
        native, raw, via_kafka = f"kafka-native-{run}", f"kafka-raw-{run}", f"kafka-kafka-{run}"
        with connect(broker.port) as wire:
            for topic in (native, raw, via_kafka):
                create_topic(wire, topic)
        rates["native produce"].append(
            records / produce_raw(broker.port, native, batches, 1, setup.window)[0])
        rates["raw produce"].append(
            records / _raw_kafka_produce(setup.kafka_port, raw, batches, setup.window))
        rates["kafka produce"].append(records / _confluent_produce(kafka, via_kafka, records))
        calls, batched = _client_alone(records)
        alone_calls.append(calls)
        alone_batched.append(batched)
        elapsed, _, read = fetch_raw(broker.port, native, 0, records, 1 << 20)
        rates["native consume"].append(read / elapsed)
        rates["raw consume"].append(
            records / _raw_kafka_fetch(setup.kafka_port, raw, records, 1 << 20))
        ours, theirs = _cpu_seconds(os.getpid()), _cpu_seconds(broker.process.pid)
        rates["kafka consume"].append(records / _confluent_consume(kafka, via_kafka, records))
        client_cpu.append(_cpu_seconds(os.getpid()) - ours)
        broker_cpu.append(_cpu_seconds(broker.process.pid) - theirs)
    rows = []
    for what in ("produce", "consume"):
        base = median(rates[f"native {what}"])
        for path, label in paths.items():
            values = rates[f"{path} {what}"]
            ratio = median(values) / base
            rows.append([what, label, spread(values), f"{ratio:.2f}x",
                         "" if path == "native" else
                         ("yes" if ratio >= 0.5 else "no") + " (>= 0.5x)"])
        if what == "produce":
            for label, values in (("confluent-kafka client alone, produce()", alone_calls),
                                  ("client alone, produce_batch", alone_batched)):
                rows.append([what, label, spread(values),
                             f"{median(values) / base:.2f}x", "(ceiling: no broker)"])
    client, served = median(client_cpu), median(broker_cpu)
    print_table(f"Kafka listener: confluent-kafka against the native raw path, acks=1, "
                f"{records:,} records of {len(VALUE)} bytes, batches of {BATCH_RECORDS}",
                ["op", "path", "records/s (min-max)", "vs native raw", "target?"], rows,
                ["native raw and raw Kafka: pre-encoded batches pipelined / a Fetch loop "
                 "reading batch headers only, on each port; confluent-kafka builds and reads "
                 "every record through its Python API; on the Kafka port the listener "
                 "converts every batch",
                 "client alone: confluent-kafka with no broker (nothing leaves its queue), "
                 "the most its Python API takes",
                 f"confluent-kafka consume, CPU: client (this process) {client:.2f} s, broker "
                 f"{served:.2f} s per run (medians): the client is "
                 f"{client / max(client + served, 1e-9):.0%} of the two"])
