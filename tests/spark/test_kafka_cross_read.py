"""Records cross between Kafka's wire protocol and tslog's own readers and writers, on one
broker with both listeners: what librdkafka (confluent-kafka) produces through the Kafka
listener, with keys, headers and CreateTimes, is what ``spark.read.format("tslog")`` reads;
what tslog's Producer writes is what kafka-python reads through the Kafka listener. One test:
a SparkSession read is the slow part, and one covers every column.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import Producer as ConfluentProducer  # noqa: E402
from kafka import KafkaConsumer  # noqa: E402
from kafka import TopicPartition as KafkaTopicPartition  # noqa: E402

from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402
from tslog.client import Admin, Producer  # noqa: E402

pytestmark = pytest.mark.spark

PARTITIONS = 2
BASE_MS = int(time.time() * 1000) - 120_000  # CreateTimes two minutes ago, inside the bounds


@pytest.fixture(scope="module")
def kafka_broker(tmp_path_factory):
    kafka_port = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("spark-kafka") / "data",
                            args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
    process.start()
    yield process, f"127.0.0.1:{kafka_port}"
    process.cleanup()


def _ms(column) -> int:
    return int(column.timestamp() * 1000 + 0.5)


def test_kafka_produced_records_read_by_spark_and_tslog_produced_read_by_kafka(
        spark, kafka_broker):
    broker, kafka = kafka_broker
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("from-kafka", partitions=PARTITIONS,
                           config={"message.timestamp.type": "CreateTime"})
        admin.create_topic("from-tslog", partitions=PARTITIONS)

    # librdkafka -> Kafka listener -> Spark source
    producer = ConfluentProducer({"bootstrap.servers": kafka, "enable.idempotence": True,
                                  "compression.type": "lz4", "linger.ms": 5})
    delivered, failures = [], []
    for i in range(40):
        key = None if i % 10 == 3 else f"key-{i}".encode()
        headers = [("n", str(i).encode()), ("kind", b"even" if i % 2 == 0 else b"odd")] \
            if i % 3 else []
        value = f"value-{i}".encode() * (1 + i % 4)
        # A delivery report carries no headers: what was sent is the expectation, the
        # report adds where it landed.
        producer.produce("from-kafka", value, key, partition=i % PARTITIONS,
                         timestamp=BASE_MS + 7 * i, headers=headers,
                         on_delivery=lambda err, msg, sent=(key, value, headers, 7 * i):
                         failures.append(err) if err else delivered.append(
                             (msg.partition(), msg.offset(), *sent[:3], BASE_MS + sent[3])))
    assert producer.flush(10) == 0 and not failures
    df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
          .option("topic", "from-kafka").option("includeHeaders", "true").load())
    read = sorted((r["partition"], r["offset"], r["key"], r["value"],
                   [(h["key"], h["value"]) for h in r["headers"] or []], _ms(r["createTime"]))
                  for r in df.collect())
    assert read == sorted(delivered)
    assert len(read) == 40 and {p for p, *_ in read} == set(range(PARTITIONS))

    # tslog's Producer -> native listener -> kafka-python through the Kafka listener
    sent = []
    with Producer(broker.bootstrap) as native:
        for i in range(20):
            partition = i % PARTITIONS
            key = None if i == 5 else f"nk-{i}".encode()
            headers = [("src", b"tslog"), ("i", str(i).encode())]
            metadata = native.send("from-tslog", f"native-{i}".encode(), key=key,
                                   partition=partition, timestamp_ms=BASE_MS + i,
                                   headers=headers).get(10)
            sent.append((partition, metadata.offset, key, f"native-{i}".encode(), headers,
                         metadata.log_append_time))
    consumer = KafkaConsumer(bootstrap_servers=kafka, consumer_timeout_ms=5000,
                             fetch_max_wait_ms=100)
    try:
        partitions = [KafkaTopicPartition("from-tslog", p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        for tp in partitions:
            consumer.seek(tp, 0)
        got = []
        for message in consumer:
            got.append((message.partition, message.offset, message.key, message.value,
                        list(message.headers), message.timestamp))
            if len(got) == len(sent):
                break
    finally:
        consumer.close()
    # A LogAppendTime topic (tslog's default): Kafka clients see the broker's time.
    assert sorted(got) == sorted(sent)
