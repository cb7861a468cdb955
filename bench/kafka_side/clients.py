"""Each system's clients and tools, as ``bench/kafka.py`` runs them: Kafka's own perf tools
(``kafka-producer-perf-test``, ``kafka-consumer-perf-test``, run as ``java -cp``) and
confluent-kafka (librdkafka) against either broker's Kafka port; tslog's own client and raw
path on tslog's port. Every function returns records per second (or seconds per lookup) and
raises when a record is missing, so a figure only counts what the broker took or served."""

from __future__ import annotations

import re
import time

from tests.helpers import kafka_reference as ref

VALUE = b"v" * 100


def create_topic(bootstrap: str, name: str, config: dict | None = None,
                 partitions: int = 1) -> None:
    """``partitions`` (one unless said), replication factor 1, LogAppendTime (tslog's
    default, set on both so both index the broker's clock) plus ``config``, through Kafka's
    CreateTopics."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    settings = {"message.timestamp.type": "LogAppendTime", **(config or {})}
    admin.create_topics([NewTopic(name, partitions, 1, config=settings)])[name].result(60)


def perf_produce(bootstrap: str, topic: str, records: int, acks: str) -> float:
    """``kafka-producer-perf-test`` with its defaults (Kafka 4: idempotent, linger 5 ms,
    batch.size 16 KiB) and ``acks``."""
    done = ref.run_tool(ref.PRODUCER_PERF, "--topic", topic, "--num-records", str(records),
                        "--record-size", "100", "--throughput", "-1", "--bootstrap-server",
                        bootstrap, "--command-property", f"acks={acks}", timeout_s=900,
                        as_scripts=True)
    found = re.findall(r"^\d+ records sent, ([\d.]+) records/sec", done.stdout, re.M)
    if done.returncode or not found:
        raise RuntimeError(f"producer perf test failed:\n{done.stdout}\n{done.stderr}")
    return float(found[-1])


def perf_consume(bootstrap: str, topic: str, records: int) -> float:
    """``kafka-consumer-perf-test`` reading ``records``; its figure only if it read them all
    (it gives up after ``--timeout`` ms without a record: 60 s here, not its 10 s)."""
    done = ref.run_tool(ref.CONSUMER_PERF, "--bootstrap-server", bootstrap, "--topic", topic,
                        "--messages", str(records), "--timeout", "60000", timeout_s=900,
                        as_scripts=True)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    heads = [n for n, line in enumerate(lines[:-1]) if "nMsg.sec" in line]
    if done.returncode or not heads:
        raise RuntimeError(f"consumer perf test failed:\n{done.stdout}\n{done.stderr}")
    fields = dict(zip((h.strip() for h in lines[heads[-1]].split(",")),
                      (v.strip() for v in lines[heads[-1] + 1].split(","))))
    if int(fields["data.consumed.in.nMsg"]) < records:
        raise RuntimeError(f"consumer perf test read {fields['data.consumed.in.nMsg']} of "
                           f"{records}:\n{done.stdout}")
    return float(fields["nMsg.sec"])


def confluent_produce(bootstrap: str, topic: str, records: int, acks: str = "1") -> float:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000})
    failed: list = []

    def delivered(error, _message) -> None:
        if error is not None:
            failed.append(error)

    began = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, VALUE, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.001)
    left = producer.flush(300)
    if left or failed:
        raise RuntimeError(f"confluent-kafka to {bootstrap}: {left} unsent, {len(failed)} "
                           f"failed, first {failed[:1]}")
    return records / (time.perf_counter() - began)


def confluent_consume_from(bootstrap: str, topic: str, when: int, records: int) -> float:
    """``offsets_for_times`` of ``when``, then consume ``records`` from there: the clock
    includes the lookup, as a consumer starting from a time pays it."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused",
                         "enable.auto.commit": False, "fetch.queue.backoff.ms": 10})
    read, idle, began = 0, 0, time.perf_counter()
    try:
        [start] = consumer.offsets_for_times([TopicPartition(topic, 0, when)], 30)
        consumer.assign([start])
        while read < records:
            batch = consumer.consume(min(10_000, records - read), 1.0)
            idle = 0 if batch else idle + 1
            if idle == 30:  # 30 empty polls in a row: the records are not there
                raise RuntimeError(f"confluent-kafka from {bootstrap}: {read} of {records}")
            read += sum(1 for message in batch if message.error() is None)
        return read / (time.perf_counter() - began)
    finally:
        consumer.close()


def confluent_lookups(bootstrap: str, topic: str, times: list[int]) -> list[float]:
    """confluent-kafka ``offsets_for_times`` of one time per call; seconds each."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused"})
    latencies = []
    try:
        consumer.offsets_for_times([TopicPartition(topic, 0, times[0])], 30)  # connect first
        for when in times:
            began = time.perf_counter()
            [found] = consumer.offsets_for_times([TopicPartition(topic, 0, when)], 30)
            latencies.append(time.perf_counter() - began)
            if found.offset < 0:
                raise RuntimeError(f"confluent-kafka lookup of {when} at {bootstrap}: {found}")
    finally:
        consumer.close()
    return latencies


def record_times(bootstrap: str, topic: str) -> tuple[int, int, int]:
    """(first record's timestamp, last record's, record count) of partition 0, read through
    the Kafka protocol, so the same code serves both brokers."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), 30)
        stamps = []
        for offset in (low, high - 1):
            consumer.assign([TopicPartition(topic, 0, offset)])
            message = None
            while message is None or message.error() is not None:
                message = consumer.poll(5.0)
            stamps.append(message.timestamp()[1])
    finally:
        consumer.close()
    return stamps[0], stamps[1], high - low


def tslog_produce_raw(native_port: int, topic: str, records: int, acks: int) -> float:
    """tslog's raw path: pre-encoded tslog batches of 1000 pipelined on tslog's own port."""
    from bench.broker_bench.produce import produce_raw
    seconds, _ = produce_raw(native_port, topic, records // 1000, acks, window=8)
    return records // 1000 * 1000 / seconds


def tslog_produce_small_raw(native_port: int, topic: str, batches: int) -> float:
    """tslog's raw path with batches of one record, 8 in flight, acks=1; records/s."""
    from bench.broker_bench.produce import produce_raw
    from tslog.protocol.records import build_batch
    batch = build_batch([VALUE], create_times=int(time.time() * 1000))
    produce_raw(native_port, topic, max(50, batches // 10), 1, 8, batch)  # warm
    seconds, _ = produce_raw(native_port, topic, batches, 1, 8, batch)
    return batches / seconds


def tslog_produce_client(native: str, topic: str, records: int, acks) -> float:
    """tslog's Producer, ``send_batch`` of 1000 values per call."""
    from tslog.client import Producer
    began = time.perf_counter()
    with Producer(native, acks=acks, linger_ms=5) as producer:
        for start in range(0, records, 1000):
            producer.send_batch(topic, [VALUE] * min(1000, records - start), partition=0)
        producer.flush()
    return records / (time.perf_counter() - began)


def tslog_consume_from(native: str, topic: str, when: int, records: int,
                       batches: bool) -> float:
    """tslog's Consumer from a time (``seek_to_timestamp``): ``poll`` or ``poll_batches``."""
    from bench.broker_bench.client_rows import consume_client
    seconds, count = consume_client(native, topic, when, records, batches=batches)
    return count / seconds


def tslog_lookups(native: str, topic: str, times: list[int]) -> list[float]:
    """tslog's Consumer ``offsets_for_times``; seconds each."""
    from bench.broker_bench.client_rows import offsets_for_times_client
    return [micros / 1e6 for micros in offsets_for_times_client(native, topic, times)]
