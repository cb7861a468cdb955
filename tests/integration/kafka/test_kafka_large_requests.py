"""Produce requests and Fetch responses over ``data_apis.OFF_LOOP_BYTES`` convert in a worker
thread: a pipelining idempotent librdkafka producer's large batches must still land once each
and in order (the connection's later requests wait for the earlier ones' appends), and a
consumer's large fetches must read them back unchanged."""

from __future__ import annotations

import random
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from tslog.broker.server.kafka.data_apis import OFF_LOOP_BYTES


def test_large_pipelined_produces_and_fetches_keep_order(kafka_broker):
    topic = kafka_broker.topic("large")
    rng = random.Random(7)
    # Variable sizes (the ragged copy) and a run of fixed ones (the strided copy).
    values = [rng.randbytes(rng.randrange(0, 300)) if i % 3 else b"f" * 120
              for i in range(12_000)]
    keys = [None if i % 7 == 0 else b"" if i % 7 == 1 else b"k%d" % i for i in range(12_000)]
    assert sum(map(len, values)) > 4 * OFF_LOOP_BYTES
    producer = Producer({"bootstrap.servers": kafka_broker.kafka, "enable.idempotence": True,
                         "linger.ms": 20, "batch.size": 1_000_000,
                         "max.in.flight.requests.per.connection": 5,
                         "compression.type": "none"})
    failures = []
    for key, value in zip(keys, values):
        producer.produce(topic, value, key, partition=0,
                         on_delivery=lambda err, msg: err and failures.append(err))
    assert producer.flush(30) == 0 and not failures
    consumer = Consumer({"bootstrap.servers": kafka_broker.kafka, "group.id": "unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                         "fetch.max.bytes": 4_000_000,
                         "max.partition.fetch.bytes": 2_000_000})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen = []
        deadline = time.monotonic() + 30
        while len(seen) < len(values) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                assert message.error() is None, message.error()
                seen.append((message.offset(), message.key(), message.value()))
    finally:
        consumer.close()
    assert [offset for offset, _, _ in seen] == list(range(len(values)))
    assert [value or b"" for _, _, value in seen] == values
    assert [key for _, key, _ in seen] == keys
