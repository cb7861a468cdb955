"""Apache Kafka beside tslog with many partitions: the same client (confluent-kafka) over the
same 10 topics x 1,000 partitions on both, and tslog's own Producer on its port. Prints one
table; asserts nothing.

    python bench/kafka_partitions.py                 # 10 topics x 1,000 partitions
    python bench/kafka_partitions.py --quick         # a smoke run: 2 topics x 20 partitions

What ``bench/partitions.py`` measures of tslog alone, measured here on a reference Apache
Kafka 4.4 (KRaft, one node, started with its scripts' JVM flags; jars fetched by mvn on first
use, tests/helpers/kafka_reference.py) and on tslog's Kafka listener, one broker after the
other, so that bench's targets can be read against what Apache Kafka, the system users
would otherwise run, does on this machine:

- creating the topics (one CreateTopics each: KRaft refuses an operation of more than
  10,000 records) until every partition has a leader in the Metadata;
- one Metadata for every topic (``list_topics``) and one lookup by time for every
  partition (``offsets_for_times``), each the client's own round trip;
- produce, acks=1, linger 5 ms, 100-byte records: to one partition, and round-robin
  over every partition (record i to partition i mod N), and the ratio of the two: the
  row ``bench/partitions.py`` holds to "within 0.5x of one partition", on both brokers;
- the brokers' own cost, no client's: pre-encoded Produce requests of N records (N the
  partitions of a topic), 2 in flight, either one batch of N records to one partition or a
  1-record batch to each of a topic's N partitions (topics in turn), raw Kafka protocol on
  both and tslog's protocol on its port;
- on tslog also its own ``Producer.send`` round-robin over the same partitions on its port.

Topics are created with each broker's defaults (Kafka's CreateTime, tslog's LogAppendTime).
Each figure is the median of ``--runs`` with (min-max).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.broker_bench.common import print_table, spread  # noqa: E402
from bench.partitions import produce_rate  # noqa: E402
from tests.helpers import kafka_reference as ref  # noqa: E402
from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402

VALUE = b"v" * 100
ONE = "one"
WINDOW = 2  # raw Produce requests in flight


def create_topics(bootstrap: str, names: list[str], partitions: int) -> float:
    """Seconds to create the topics one by one, until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    began = time.perf_counter()
    for name in names:
        admin.create_topics([NewTopic(name, partitions, 1)], request_timeout=600)[name].result(900)
    while not all_led(admin, names, partitions):
        time.sleep(0.5)
    return time.perf_counter() - began


def all_led(admin, names: list[str], partitions: int) -> bool:
    topics = admin.list_topics(timeout=120).topics
    return all(name in topics and topics[name].error is None
               and len(topics[name].partitions) == partitions
               and all(p.leader >= 0 for p in topics[name].partitions.values())
               for name in names)


def metadata_ms(bootstrap: str, names: list[str]) -> float:
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for _ in range(3):  # connected to the bootstrap, then to the broker it names: then timed
        admin.list_topics(timeout=120)
    began = time.perf_counter()
    topics = admin.list_topics(timeout=120).topics
    elapsed = (time.perf_counter() - began) * 1e3
    assert all(name in topics for name in names)
    return elapsed


def lookup_all_ms(bootstrap: str, targets: list[tuple[str, int]], when: int) -> float:
    """One ``offsets_for_times`` for every partition at ``when``; each answer checked."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-lookups",
                         "enable.auto.commit": False})
    try:
        asked = [TopicPartition(topic, partition, when) for topic, partition in targets]
        consumer.offsets_for_times(asked[:1], timeout=120)  # connected, then timed
        began = time.perf_counter()
        found = consumer.offsets_for_times(asked, timeout=120)
        elapsed = (time.perf_counter() - began) * 1e3
    finally:
        consumer.close()
    failed = [tp for tp in found if tp.error is not None or tp.offset < 0]
    assert not failed, f"{len(failed)} lookups failed, e.g. {failed[0]}"
    return elapsed


def confluent_rate(bootstrap: str, targets: list[tuple[str, int]], records: int) -> float:
    """Records/s of confluent-kafka ``produce`` round-robin over ``targets``, acks=1."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5,
                         "queue.buffering.max.messages": 2_000_000})
    producer.produce(targets[0][0], VALUE, partition=targets[0][1])
    producer.flush(120)  # metadata and connection, then timed
    began = time.perf_counter()
    for i in range(records):
        topic, partition = targets[i % len(targets)]
        while True:
            try:
                producer.produce(topic, VALUE, partition=partition)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(600):
        raise RuntimeError("confluent-kafka did not deliver every record")
    return records / (time.perf_counter() - began)


def kafka_frames(names: list[str], partitions: int, spread_out: bool, requests: int) -> list:
    """Produce v9 frames, acks=1, each carrying ``partitions`` records of 100 bytes: one
    record to each partition of a topic (topics in turn), or, not ``spread_out``, one batch
    of them all to partition 0 of the first topic."""
    from tslog.protocol.kafka import encode_request
    from tslog.protocol.kafka.record_batch import encode_batch
    now = int(time.time() * 1000)
    single, whole = encode_batch([VALUE], None, now), encode_batch([VALUE] * partitions, None, now)
    frames = []
    for n in range(requests):
        data = [{"index": p, "records": single} for p in range(partitions)] if spread_out \
            else [{"index": 0, "records": whole}]
        body = encode_request(0, 9, n, "bench", {
            "transactional_id": None, "acks": 1, "timeout_ms": 60_000, "topic_data": [
                {"name": names[n % len(names)] if spread_out else names[0],
                 "partition_data": data}]})
        frames.append(struct.pack(">I", len(body)) + body)
    return frames


def kafka_raw_rate(bootstrap: str, names: list[str], partitions: int, spread_out: bool,
                   requests: int) -> float:
    """Records/s of ``kafka_frames`` sent ``WINDOW`` in flight; errors raise."""
    from bench.kafka_side.raw_kafka import connect, read_frame
    from tslog.protocol.kafka import decode_response
    frames = kafka_frames(names, partitions, spread_out, requests)
    with connect(bootstrap) as sock:
        def answer() -> None:
            _, body = decode_response(0, 9, read_frame(sock))
            codes = {part["error_code"] for topic in body["responses"]
                     for part in topic["partition_responses"]}
            if codes != {0}:
                raise RuntimeError(f"raw produce at {bootstrap}: errors {codes}")
        return pipelined(frames, sock.sendall, answer) * partitions


def native_raw_rate(port: int, names: list[str], partitions: int, spread_out: bool,
                    requests: int) -> float:
    """The same as ``kafka_frames`` and ``kafka_raw_rate`` on tslog's own port."""
    from bench.broker_bench.common import connect
    from tslog.protocol.messages import ApiKey
    from tslog.protocol.records import build_batch
    now = int(time.time() * 1000)
    single = build_batch([VALUE], create_times=now)
    whole = build_batch([VALUE] * partitions, create_times=now)
    with connect(port) as wire:
        frames = []
        for n in range(requests):
            parts = [{"partition": p, "records": single} for p in range(partitions)] \
                if spread_out else [{"partition": 0, "records": whole}]
            topic = names[n % len(names)] if spread_out else names[0]
            body = {"acks": 1, "timeout_ms": 60_000,
                    "topics": [{"topic": topic, "partitions": parts}]}
            frames.append(wire.encode(ApiKey.PRODUCE, body, validate=False))

        def answer() -> None:
            codes = {part["error_code"] for topic in wire.read_body()["topics"]
                     for part in topic["partitions"]}
            if codes != {0}:
                raise RuntimeError(f"raw produce on port {port}: errors {codes}")
        return pipelined(frames, wire.sock.sendall, answer) * partitions


def pipelined(frames: list, send, answer) -> float:
    """Requests per second: every frame sent with ``WINDOW`` awaiting their answers."""
    sent = answered = 0
    began = time.perf_counter()
    while answered < len(frames):
        while sent < len(frames) and sent - answered < WINDOW:
            send(frames[sent])
            sent += 1
        answer()
        answered += 1
    return len(frames) / (time.perf_counter() - began)


def measure(bootstrap: str, names: list[str], partitions: int, args, native=None) -> dict:
    """{figure: [value per run]} for one broker (``native``: tslog's own broker process)."""
    figures: dict = {"create": [create_topics(bootstrap, names, partitions)]}
    create_topics(bootstrap, [ONE], 1)
    targets = [(name, p) for p in range(partitions) for name in names]
    when = int(time.time() * 1000)
    confluent_rate(bootstrap, targets, len(targets))  # a record after `when` in every partition
    for _ in range(args.runs):
        figures.setdefault("metadata", []).append(metadata_ms(bootstrap, names))
        figures.setdefault("lookup", []).append(lookup_all_ms(bootstrap, targets, when))
        add_pair(figures, "confluent", confluent_rate(bootstrap, [(ONE, 0)], args.records * 5),
                 confluent_rate(bootstrap, targets, args.records))
        requests = max(4 * len(names), 2 * args.records // partitions)
        add_pair(figures, "raw",
                 kafka_raw_rate(bootstrap, names, partitions, False, requests),
                 kafka_raw_rate(bootstrap, names, partitions, True, requests))
        if native is not None:
            add_pair(figures, "native",
                     produce_rate(native.bootstrap, [(ONE, 0)], args.records * 5),
                     produce_rate(native.bootstrap, targets, args.records))
            add_pair(figures, "native raw",
                     native_raw_rate(native.port, names, partitions, False, requests),
                     native_raw_rate(native.port, names, partitions, True, requests))
    return figures


def add_pair(figures: dict, key: str, one: float, spread_rate: float) -> None:
    """A one-partition rate, the round-robin rate and their ratio, for one run."""
    for suffix, value in ((" one", one), (" all", spread_rate), (" ratio", spread_rate / one)):
        figures.setdefault(key + suffix, []).append(value)


ROWS = [
    ("create", "create the topics until every partition has a leader (s)", 1),
    ("metadata", "one Metadata for every topic, confluent-kafka list_topics (ms)", 1),
    ("lookup", "one lookup by time for every partition, confluent-kafka offsets_for_times (ms)", 1),
    ("confluent one", "produce to one partition, confluent-kafka (records/s)", 0),
    ("confluent all", "produce round-robin over every partition, confluent-kafka (records/s)", 0),
    ("confluent ratio", "round-robin / one partition, confluent-kafka", 3),
    ("raw one", "raw Kafka Produce, a batch of N records to one partition (records/s)", 0),
    ("raw all", "raw Kafka Produce, a 1-record batch to each of a topic's N partitions "
                "(records/s)", 0),
    ("raw ratio", "spread / one partition, raw Kafka Produce", 3),
    ("native one", "produce to one partition, tslog Producer on its port (records/s)", 0),
    ("native all", "produce round-robin over every partition, tslog Producer (records/s)", 0),
    ("native ratio", "round-robin / one partition, tslog Producer", 3),
    ("native raw one", "raw tslog Produce on its port, a batch of N records to one partition "
                       "(records/s)", 0),
    ("native raw all", "raw tslog Produce, a 1-record batch to each of a topic's N partitions "
                       "(records/s)", 0),
    ("native raw ratio", "spread / one partition, raw tslog Produce", 3),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=1000, help="per topic")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=20_000,
                        help="round-robin records per run (one partition: five times as many)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 topics x 20 partitions, 1 run of 500 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.topics, args.partitions, args.runs, args.records = 2, 20, 1, 500
    names = [f"t{n}" for n in range(args.topics)]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-kafka-partitions-") as scratch:
        ref.jars("broker")
        kafka = ref.KafkaReference(Path(scratch) / "kafka", as_scripts=True)
        kafka.start()
        try:
            results["kafka"] = measure(kafka.bootstrap, names, args.partitions, args)
        finally:
            kafka.stop()
        kafka_port = free_port()
        tslog = BrokerProcess(Path(scratch) / "tslog",
                              args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
        tslog.start()
        try:
            results["tslog"] = measure(f"127.0.0.1:{kafka_port}", names, args.partitions, args,
                                       native=tslog)
        finally:
            tslog.stop()
    rows = [[label, *(spread(results[side].get(key), digits=digits)
                      if results[side].get(key) else "-" for side in ("kafka", "tslog"))]
            for key, label, digits in ROWS]
    count = args.topics * args.partitions
    print_table(f"Apache Kafka 4.4 and tslog, {args.topics} topics x {args.partitions:,} "
                f"partitions = {count:,}, {args.runs} runs (median (min-max))",
                ["figure", "Apache Kafka", "tslog"], rows,
                notes=["confluent-kafka rows: the same client against Kafka and against "
                       "tslog's Kafka listener; acks=1, linger 5 ms, 100-byte records",
                       f"raw rows: pre-encoded Produce requests of N = {args.partitions:,} "
                       f"records each, {WINDOW} in flight, acks=1, topics in turn: each "
                       "broker's own cost per batch against per record, no client's",
                       "load average (1, 5, 15 min) at the end: "
                       + " / ".join(f"{x:.1f}" for x in os.getloadavg())])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
