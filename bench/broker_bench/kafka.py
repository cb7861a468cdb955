"""Kafka listener rows: confluent-kafka (librdkafka) producing and consuming through the
broker's Kafka port, beside the native raw path measured in the same run (pre-encoded tslog
batches of 1000 pipelined on one connection; a Fetch loop that decodes batch headers only).

The Kafka rows include what the native raw rows leave out on purpose: librdkafka building
(or reading) every record, and the listener converting each batch between Kafka's format and
tslog's (``tslog.protocol.kafka.convert``). The target, >= 0.5x of the native raw path, is
printed beside the figures, never asserted. Skipped with a message when confluent-kafka is
not installed (``pip install -e '.[dev]'``)."""

from __future__ import annotations

import importlib.util
import time

from .common import BATCH_RECORDS, VALUE, connect, create_topic, median, print_table, spread
from .consume import fetch_raw
from .context import Setup
from .produce import produce_raw


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


def _confluent_consume(kafka: str, topic: str, records: int) -> float:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "bench",
                         "enable.auto.commit": False, "fetch.max.bytes": 8 << 20,
                         "max.partition.fetch.bytes": 8 << 20})
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
    rates: dict[str, list[float]] = {key: [] for key in
                                     ("native produce", "kafka produce",
                                      "native consume", "kafka consume")}
    for run in range(setup.runs):
        native, via_kafka = f"kafka-native-{run}", f"kafka-kafka-{run}"
        with connect(broker.port) as wire:
            create_topic(wire, native)
            create_topic(wire, via_kafka)
        rates["native produce"].append(
            records / produce_raw(broker.port, native, batches, 1, setup.window)[0])
        rates["kafka produce"].append(records / _confluent_produce(kafka, via_kafka, records))
        elapsed, _, read = fetch_raw(broker.port, native, 0, records, 1 << 20)
        rates["native consume"].append(read / elapsed)
        rates["kafka consume"].append(records / _confluent_consume(kafka, via_kafka, records))
    rows = []
    for what in ("produce", "consume"):
        base = median(rates[f"native {what}"])
        for path in ("native", "kafka"):
            values = rates[f"{path} {what}"]
            ratio = median(values) / base
            rows.append([what, "tslog raw, native port" if path == "native" else
                         "confluent-kafka, Kafka listener", spread(values),
                         f"{ratio:.2f}x", "" if path == "native" else
                         ("yes" if ratio >= 0.5 else "no") + " (>= 0.5x)"])
    print_table(f"Kafka listener: confluent-kafka against the native raw path, acks=1, "
                f"{records:,} records of {len(VALUE)} bytes, batches of {BATCH_RECORDS}",
                ["op", "path", "records/s (min-max)", "vs native raw", "target?"], rows,
                ["native raw: pre-encoded tslog batches pipelined / a Fetch loop reading batch "
                 "headers only; confluent-kafka builds and reads every record in librdkafka "
                 "and the listener converts every batch"])
