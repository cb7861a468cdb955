"""A Kafka batch within the topic's ``max.message.bytes`` is taken even when its tslog batch
is larger (tslog's fixed-width CreateTimes and lengths against Kafka's varints).

librdkafka fills batches up to ``batch.size`` (1,000,000 bytes by default) whenever records
queue up (a loaded machine, a long linger): 9,082 records of 100 bytes make a Kafka batch
under 1 MB and a tslog batch of 1,053,604 bytes, which the broker refused with
MESSAGE_TOO_LARGE, and librdkafka failed those records for good (a bench run of 200,000
kept 109,180: ten such batches lost). A long ``linger.ms`` fills the batches here whatever
the machine's load, so what is asserted does not depend on timing: every record is
delivered, and every delivered offset holds its record."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition


def _produce(broker, topic: str, values: list, keys: list, settings: dict) -> dict:
    producer = Producer({"bootstrap.servers": broker.kafka, "acks": 1, "linger.ms": 10_000,
                         "queue.buffering.max.messages": 1_000_000,
                         "compression.type": "none", **settings})
    delivered, failed = {}, []

    def report(error, message) -> None:
        if error is not None:
            failed.append(error)
        else:
            delivered[message.offset()] = (message.key(), message.value())

    for key, value in zip(keys, values):
        producer.produce(topic, value, key, partition=0, on_delivery=report)
    assert producer.flush(120) == 0
    assert failed == [], failed[:3]
    return delivered


def _read(broker, topic: str, count: int) -> dict:
    consumer = Consumer({"bootstrap.servers": broker.kafka, "group.id": "unused",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    seen: dict = {}
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), 30)
        assert (low, high) == (0, count)
        consumer.assign([TopicPartition(topic, 0, 0)])
        idle = 0
        while len(seen) < count and idle < 60:  # 60 empty polls: the records are not there
            batch = consumer.consume(10_000, 1.0)
            idle = 0 if batch else idle + 1
            for message in batch:
                assert message.error() is None, message.error()
                seen[message.offset()] = (message.key(), message.value())
    finally:
        consumer.close()
    return seen


def test_full_librdkafka_batches_of_100_byte_records_are_all_taken(kafka_broker):
    topic = kafka_broker.topic("full")
    values = [b"%012d" % i + b"v" * 88 for i in range(20_000)]  # two full batches and more
    delivered = _produce(kafka_broker, topic, values, [None] * len(values), {})
    assert sorted(delivered) == list(range(len(values)))
    assert _read(kafka_broker, topic, len(values)) == delivered
    assert [value for _, (_, value) in sorted(delivered.items())] == values


def test_small_records_whose_batch_grows_past_twice_the_limit_are_all_taken(kafka_broker):
    # Empty and tiny values, keys and headers: each record takes about twice as much room
    # in tslog's batch as in Kafka's, so a full batch is cut in three or four.
    topic = kafka_broker.topic("small", max_message_bytes="100000")
    values = [b"" if i % 5 == 0 else b"%d" % i for i in range(30_000)]
    keys = [None if i % 3 else b"k%d" % (i % 10) for i in range(len(values))]
    delivered = _produce(kafka_broker, topic, values, keys, {"batch.size": 100_000})
    assert sorted(delivered) == list(range(len(values)))
    read = _read(kafka_broker, topic, len(values))
    assert {offset: (key, value or b"") for offset, (key, value) in read.items()} == \
        {offset: (key, value or b"") for offset, (key, value) in delivered.items()}
