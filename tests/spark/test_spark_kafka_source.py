"""Spark's own Kafka source (``spark-sql-kafka-0-10``, fetched by mvn into an ignored cache:
tests/kafka_reference/spark/pom.xml) reading tslog through its Kafka listener returns exactly
the rows ``format("tslog")`` returns for the same range: by ``startingTimestamp`` and
``endingTimestamp``, by ``startingOffsetsByTimestamp``, and as a stream with
``maxOffsetsPerTrigger`` and ``trigger(availableNow=True)``.

The topic is LogAppendTime (tslog's default), so Kafka's ``offsetsForTimes`` searches the
same LogAppendTime index that ``format("tslog")`` resolves its timestamps through. Three
produces, each flushed, give three distinct append times to cut ranges at.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")

from tests.helpers.broker_process import BrokerProcess, free_port  # noqa: E402
from tests.spark.conftest import KAFKA_SOURCE  # noqa: E402
from tslog.client import Admin, Producer  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.kafka_reference, pytest.mark.slow]

TOPIC = "spark-kafka"
PARTITIONS = 2
PER_PRODUCE = 12
COLUMNS = ("partition", "offset", "key", "value", "timestamp")


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A broker with both listeners, and the topic written in three produces: (tslog's
    bootstrap, Kafka's bootstrap, the first append time of each produce)."""
    kafka_port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("spark-kafka-source") / "data",
                           args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
    broker.start()
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=PARTITIONS)
    times = []
    with Producer(broker.bootstrap) as producer:
        for round_ in range(3):
            futures = [producer.send(TOPIC, f"v{round_}-{i}".encode(), key=f"k{i}".encode(),
                                     partition=i % PARTITIONS) for i in range(PER_PRODUCE)]
            producer.flush()
            times.append(min(f.get().log_append_time for f in futures))
    assert times[0] < times[1] < times[2], "each produce got an append time of its own"
    yield broker.bootstrap, f"127.0.0.1:{kafka_port}", times
    broker.cleanup()


@pytest.fixture(scope="module")
def kafka_source(spark):
    assert "unavailable" not in KAFKA_SOURCE, KAFKA_SOURCE.get("unavailable")
    return spark


def rows(df) -> list[tuple]:
    return sorted((r["partition"], r["offset"], bytes(r["key"]), bytes(r["value"]),
                   r["timestamp"]) for r in df.select(*COLUMNS).collect())


def tslog_read(spark, bootstrap: str, **options):
    reader = spark.read.format("tslog").option("bootstrap", bootstrap).option("topic", TOPIC)
    for name, value in options.items():
        reader = reader.option(name, value)
    return rows(reader.load())


def kafka_read(spark, bootstrap: str, **options):
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", TOPIC))
    for name, value in options.items():
        reader = reader.option(name, value)
    return rows(reader.load())


def test_starting_and_ending_timestamp(kafka_source, written):
    bootstrap, kafka, times = written
    window = {"startingTimestamp": str(times[1]), "endingTimestamp": str(times[2])}
    ours = tslog_read(kafka_source, bootstrap, **window)
    assert kafka_read(kafka_source, kafka, **window) == ours
    assert len(ours) == PER_PRODUCE and {value[:3] for *_, value, _ in ours} == {b"v1-"}


def test_starting_offsets_by_timestamp(kafka_source, written):
    bootstrap, kafka, times = written
    by_partition = json.dumps({TOPIC: {"0": times[2], "1": times[1]}})
    ours = tslog_read(kafka_source, bootstrap, startingOffsetsByTimestamp=by_partition)
    assert kafka_read(kafka_source, kafka, startingOffsetsByTimestamp=by_partition) == ours
    assert len(ours) == PER_PRODUCE // 2 + PER_PRODUCE  # partition 0: one produce; 1: two


def stream(spark, source: str, bootstrap: str, checkpoint, name: str) -> tuple[list, list]:
    """An availableNow stream with maxOffsetsPerTrigger 5 into a memory table: (its rows,
    the number of rows of each micro-batch)."""
    reader = spark.readStream.format(source)
    if source == "tslog":
        reader = reader.option("bootstrap", bootstrap).option("topic", TOPIC)
    else:
        reader = reader.option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
    query = (reader.option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "5")
             .load().select(*COLUMNS).writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination(300)
        assert not query.isActive, f"{source}: the availableNow stream did not finish"
        sizes = [progress["numInputRows"] for progress in query.recentProgress]
    finally:
        query.stop()
    return rows(spark.table(name)), [size for size in sizes if size]


def test_stream_with_max_offsets_per_trigger_available_now(kafka_source, written, tmp_path):
    bootstrap, kafka, _ = written
    ours, our_sizes = stream(kafka_source, "tslog", bootstrap, tmp_path / "tslog", "via_tslog")
    theirs, their_sizes = stream(kafka_source, "kafka", kafka, tmp_path / "kafka", "via_kafka")
    assert theirs == ours and len(ours) == 3 * PER_PRODUCE
    assert max(our_sizes) <= 5 and max(their_sizes) <= 5
    assert sum(our_sizes) == sum(their_sizes) == 3 * PER_PRODUCE
