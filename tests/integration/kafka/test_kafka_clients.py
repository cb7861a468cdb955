"""Real Kafka clients against tslog's Kafka listener: kafka-python, aiokafka and
confluent-kafka (librdkafka), none written here. Each produces with every codec and each
consumes what the others produced; records cross between the Kafka path and tslog's own
client both ways (keys, values, headers, timestamps); acks 0, 1 and all; a CreateTime topic
against a LogAppendTime topic. One broker serves the whole module."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition

from tslog.client import Admin, Consumer, Producer, TopicPartition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BASE_MS = int(time.time() * 1000) - 60_000  # CreateTimes a minute ago, inside the bounds


def _records(client: str, codec: str) -> list[tuple]:
    """(key, value, headers, create time) of the records one client sends with one codec."""
    return [(f"{client}-{codec}-{i}".encode(), f"value {i} {codec}".encode() * (i + 1),
             [("h", f"{i}".encode())], BASE_MS + i) for i in range(3)]


def _kafka_python_produce(bootstrap, topic, codec, records, acks="all"):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, linger_ms=2,
                             compression_type=None if codec == "none" else codec)
    try:
        for key, value, headers, ts in records:
            producer.send(topic, value, key=key, headers=headers, timestamp_ms=ts, partition=0)
        producer.flush(10)
    finally:
        producer.close(5)


def _aiokafka_produce(bootstrap, topic, codec, records):
    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True,
                                    compression_type=None if codec == "none" else codec)
        await producer.start()
        try:
            for key, value, headers, ts in records:
                await producer.send_and_wait(topic, value, key=key, headers=headers,
                                             timestamp_ms=ts, partition=0)
        finally:
            await producer.stop()
    asyncio.run(run())


def _confluent_produce(bootstrap, topic, codec, records):
    producer = ConfluentProducer({"bootstrap.servers": bootstrap, "compression.type": codec,
                                  "enable.idempotence": True, "linger.ms": 2})
    failures = []
    for key, value, headers, ts in records:
        producer.produce(topic, value, key, partition=0, headers=headers, timestamp=ts,
                         on_delivery=lambda err, msg: err and failures.append(err))
    assert producer.flush(10) == 0
    assert not failures


PRODUCERS = {"kafka-python": _kafka_python_produce, "aiokafka": _aiokafka_produce,
             "confluent-kafka": _confluent_produce}


def _kafka_python_consume(bootstrap, topic, count):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=5000,
                             fetch_max_wait_ms=100)
    try:
        tp = KTopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        out = []
        for message in consumer:
            out.append((message.offset, message.key, message.value, list(message.headers),
                        message.timestamp, message.timestamp_type))
            if len(out) == count:
                break
        return out
    finally:
        consumer.close()


def _aiokafka_consume(bootstrap, topic, count):
    async def run():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=100)
        await consumer.start()
        try:
            tp = AioTopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            out = []
            deadline = time.monotonic() + 10
            while len(out) < count and time.monotonic() < deadline:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    out += [(m.offset, m.key, m.value, [(k, bytes(v)) for k, v in m.headers],
                             m.timestamp, m.timestamp_type) for m in batch]
            return out
        finally:
            await consumer.stop()
    return asyncio.run(run())


def _confluent_consume(bootstrap, topic, count):
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        consumer.assign([ConfluentTopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + 10
        while len(out) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            kind, ts = message.timestamp()
            out.append((message.offset(), message.key(), message.value(),
                        list(message.headers() or []), ts, kind - 1))
        return out
    finally:
        consumer.close()


CONSUMERS = {"kafka-python": _kafka_python_consume, "aiokafka": _aiokafka_consume,
             "confluent-kafka": _confluent_consume}


def test_every_client_produces_with_every_codec_and_every_client_reads_it_back(kafka_broker):
    topic = kafka_broker.topic("codecs", message_timestamp_type="CreateTime")
    sent = []
    for client, produce in PRODUCERS.items():
        for codec in CODECS:
            records = _records(client, codec)
            produce(kafka_broker.kafka, topic, codec, records)
            sent += records
    expected = [(offset, key, value, headers, ts, 0)
                for offset, (key, value, headers, ts) in enumerate(sent)]
    for client, consume in CONSUMERS.items():
        assert consume(kafka_broker.kafka, topic, len(sent)) == expected, client


def test_acks_0_1_and_all_all_land(kafka_broker):
    topic = kafka_broker.topic("acks", message_timestamp_type="CreateTime")
    sent = []
    for acks in (0, 1, "all"):
        records = _records(f"acks{acks}", "none")
        _kafka_python_produce(kafka_broker.kafka, topic, "none", records, acks=acks)
        sent += records
    got = _kafka_python_consume(kafka_broker.kafka, topic, len(sent))
    assert [(key, value) for _, key, value, *_ in got] == [(k, v) for k, v, _, _ in sent]


def test_kafka_records_read_through_tslog_and_tslog_records_through_kafka(kafka_broker):
    topic = kafka_broker.topic("both", message_timestamp_type="CreateTime")
    records = _records("confluent", "zstd")
    _confluent_produce(kafka_broker.kafka, topic, "zstd", records)
    with Producer(kafka_broker.bootstrap) as producer:
        producer.send(topic, b"native", key=b"nk", partition=0, timestamp_ms=BASE_MS + 7,
                      headers=[("n", b"1")]).get(10)
    with Consumer(kafka_broker.bootstrap) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        native = []
        deadline = time.monotonic() + 10
        while len(native) < 4 and time.monotonic() < deadline:
            native += consumer.poll(500)
    assert [(r.key, r.value, list(r.headers), r.create_time) for r in native] == \
        [(k, v, h, ts) for k, v, h, ts in records] + [(b"nk", b"native", [("n", b"1")],
                                                      BASE_MS + 7)]
    through_kafka = _kafka_python_consume(kafka_broker.kafka, topic, 4)
    assert through_kafka[3][1:] == (b"nk", b"native", [("n", b"1")], BASE_MS + 7, 0)


def test_a_log_append_time_topic_hands_kafka_clients_the_brokers_time(kafka_broker):
    topic = kafka_broker.topic("lat")  # LogAppendTime: tslog's default
    records = _records("lat", "none")
    _kafka_python_produce(kafka_broker.kafka, topic, "none", records)
    with Consumer(kafka_broker.bootstrap) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek(TopicPartition(topic, 0), 0)
        native = []
        deadline = time.monotonic() + 10
        while len(native) < 3 and time.monotonic() < deadline:
            native += consumer.poll(500)
    assert [r.create_time for r in native] == [ts for *_, ts in records]
    for consume in CONSUMERS.values():
        got = consume(kafka_broker.kafka, topic, 3)
        # type 1 = LogAppendTime; the timestamp is tslog's LAT, not the producer's CreateTime
        assert [(ts, kind) for *_, ts, kind in got] == \
            [(r.log_append_time, 1) for r in native]
        assert all(r.log_append_time > r.create_time for r in native)


def test_message_timestamp_type_is_a_topic_config_like_the_others(kafka_broker):
    """Set by the `tslog` CLI, described, and altered: Kafka consumers see the new type at
    once (the open log's config is replaced, as for every config)."""
    cli = [sys.executable, "-m", "tslog.client.cli"]
    done = subprocess.run(cli + ["topics", "create", "viacli", "--config",
                                 "message.timestamp.type=CreateTime", "--bootstrap",
                                 kafka_broker.bootstrap], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    bad = subprocess.run(cli + ["topics", "create", "badtype", "--config",
                                "message.timestamp.type=createtime", "--bootstrap",
                                kafka_broker.bootstrap], capture_output=True, text=True,
                         timeout=30)
    assert bad.returncode != 0
    assert "message.timestamp.type must be one of LogAppendTime, CreateTime" in bad.stderr
    records = _records("alter", "none")
    _kafka_python_produce(kafka_broker.kafka, "viacli", "none", records)
    assert [(ts, kind) for *_, ts, kind in _kafka_python_consume(kafka_broker.kafka, "viacli",
                                                                 3)] == \
        [(ts, 0) for *_, ts in records]
    with Admin(kafka_broker.bootstrap) as admin:
        assert admin.describe_configs("viacli")["message.timestamp.type"].value == "CreateTime"
        admin.alter_configs("viacli", {"message.timestamp.type": "LogAppendTime"})
    got = _confluent_consume(kafka_broker.kafka, "viacli", 3)
    assert [kind for *_, kind in got] == [1, 1, 1]
    assert all(ts > records[-1][3] for *_, ts, _ in got)
