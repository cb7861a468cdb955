"""format("tslog") against a real broker process with a real local[2] SparkSession.

Every batch read is checked against what ``tslog.client.Consumer`` reads for the same range,
as sets of (partition, offset). What was read is checked through the plan log the reader writes
($TSLOG_SPARK_PLAN_LOG): the offset ranges Spark's tasks were given.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402

from tslog.client import Admin, Consumer, Producer, TopicPartition  # noqa: E402
from tslog.spark_connector import (  # noqa: E402
    DataLossError,
    TslogDataSource,
    TslogPlanError,
    register,
)
from tslog.spark_connector.datasource import _read  # noqa: E402

pytestmark = pytest.mark.spark

TOPIC = "events"
PARTITIONS = 3


# ------------------------------------------------------------------------------------ helpers


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def wait_for_next_ms(after: int) -> int:
    """Busy-wait (a few ms) until the wall clock is past ``after``; return the new ms."""
    while now_ms() <= after:
        time.sleep(0.001)
    return now_ms()


def produce(bootstrap, topic, count, partitions, *, start=0, headers_every=0):
    """Send ``count`` records round-robin; return [(partition, offset, LAT)]."""
    with Producer(bootstrap, linger_ms=2) as producer:
        futures = []
        for i in range(start, start + count):
            headers = [("n", str(i).encode()), ("kind", b"test")] \
                if headers_every and i % headers_every == 0 else None
            futures.append(producer.send(topic, b"value-%d" % i,
                                         key=None if i % 4 == 0 else b"key-%d" % i,
                                         partition=i % partitions, headers=headers))
        producer.flush()
        return [(m.partition, m.offset, m.log_append_time)
                for m in (f.get(10) for f in futures)]


def client_read(bootstrap, topic, starts: dict, ends: dict) -> set:
    """(partition, offset) of the records the client reads in [starts[p], ends[p])."""
    wanted = {p for p in starts if ends[p] > starts[p]}
    found = set()
    if not wanted:
        return found
    with Consumer(bootstrap) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in sorted(wanted)])
        for p in wanted:
            consumer.seek(TopicPartition(topic, p), starts[p])
        done = set()
        deadline = time.monotonic() + 30
        while done != wanted and time.monotonic() < deadline:
            for record in consumer.poll(500):
                p = record.partition
                if record.offset < ends[p]:
                    found.add((p, record.offset))
                if record.offset >= ends[p] - 1:
                    done.add(p)
    return found


def client_offsets_for_time(bootstrap, topic, partitions, ts, default_end=True):
    with Consumer(bootstrap) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        found = consumer.offsets_for_times({tp: ts for tp in tps})
        ends = consumer.end_offsets(tps)
    return {tp.partition: (found[tp].offset if found[tp] is not None
                           else ends[tp] if default_end else None) for tp in tps}


def client_end_offsets(bootstrap, topic, partitions):
    with Consumer(bootstrap) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}


def pairs(df) -> set:
    return {(r["partition"], r["offset"]) for r in df.select("partition", "offset").collect()}


def reader(spark, bootstrap, topic=TOPIC, **options):
    df = spark.read.format("tslog").option("bootstrap", bootstrap).option("topic", topic)
    for key, value in options.items():
        df = df.option(key, value)
    return df.load()


def plan_entries(plan_log, kind=None):
    if not plan_log.exists():
        return []
    entries = [json.loads(line) for line in plan_log.read_text().splitlines() if line]
    return [e for e in entries if kind is None or e["kind"] == kind]


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


# ------------------------------------------------------------------------------------ data


@pytest.fixture(scope="module")
def events(broker):
    """Three phases of records with times T1 and T2 between them (LAT, ms)."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=PARTITIONS)
    phase_a = produce(broker.bootstrap, TOPIC, 300, PARTITIONS, headers_every=7)
    t1 = wait_for_next_ms(max(lat for _, _, lat in phase_a))
    phase_b = produce(broker.bootstrap, TOPIC, 300, PARTITIONS, start=300, headers_every=7)
    t2 = wait_for_next_ms(max(lat for _, _, lat in phase_b))
    phase_c = produce(broker.bootstrap, TOPIC, 300, PARTITIONS, start=600, headers_every=7)
    return {"t1": t1, "t2": t2, "records": phase_a + phase_b + phase_c}


# ------------------------------------------------------------------------------------ batch


def test_auto_registered_and_schema(spark, broker, events):
    df = reader(spark, broker.bootstrap, includeHeaders="true")
    assert [f.name for f in df.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
        "createTime", "headers"]
    assert df.schema["timestamp"].dataType.typeName() == "timestamp"
    assert df.schema["createTime"].dataType.typeName() == "timestamp"
    rows = {(r["partition"], r["offset"]): r for r in df.collect()}
    assert len(rows) == 900
    lat = {(p, o): t for p, o, t in events["records"]}
    with Consumer(broker.bootstrap) as consumer:
        consumer.assign([TopicPartition(TOPIC, 1)])
        consumer.seek(TopicPartition(TOPIC, 1), 0)
        records = []
        while len(records) < 300:
            records.extend(consumer.poll(1000))
    for record in records:
        row = rows[(1, record.offset)]
        assert row["value"] == record.value
        assert row["key"] == record.key
        assert row["topic"] == TOPIC
        assert row["timestampType"] == 1
        assert int(row["timestamp"].timestamp() * 1000 + 0.5) == record.log_append_time \
            == lat[(1, record.offset)]
        assert int(row["createTime"].timestamp() * 1000 + 0.5) == record.create_time
        if record.headers:
            assert [(h["key"], h["value"]) for h in row["headers"]] == list(record.headers)
        else:
            assert row["headers"] is None


def test_register_helper_and_no_headers_column(spark, broker, events):
    register(spark)
    df = reader(spark, broker.bootstrap)
    assert "headers" not in df.columns
    assert df.count() == 900


def test_starting_and_ending_timestamp_match_client(spark, broker, events):
    t1, t2 = events["t1"], events["t2"]
    starts = client_offsets_for_time(broker.bootstrap, TOPIC, PARTITIONS, t1)
    ends = client_offsets_for_time(broker.bootstrap, TOPIC, PARTITIONS, t2)
    expected = client_read(broker.bootstrap, TOPIC, starts, ends)
    assert len(expected) == 300
    got = pairs(reader(spark, broker.bootstrap, startingTimestamp=str(t1),
                       endingTimestamp=str(t2)))
    assert got == expected
    # ISO-8601 strings mean the same instants (Spark's Kafka source refuses them).
    got_iso = pairs(reader(spark, broker.bootstrap, startingTimestamp=iso(t1),
                           endingTimestamp=iso(t2)))
    assert got_iso == expected
    # Only a start: up to the latest offset.
    ends_latest = client_end_offsets(broker.bootstrap, TOPIC, PARTITIONS)
    assert pairs(reader(spark, broker.bootstrap, startingTimestamp=str(t2))) == \
        client_read(broker.bootstrap, TOPIC, client_offsets_for_time(
            broker.bootstrap, TOPIC, PARTITIONS, t2), ends_latest)


def test_offsets_json_match_client(spark, broker, events):
    starting = {TOPIC: {"0": 3, "1": -2, "2": 250}}
    ending = {TOPIC: {"0": 40, "1": -1, "2": 251}}
    got = pairs(reader(spark, broker.bootstrap, startingOffsets=json.dumps(starting),
                       endingOffsets=json.dumps(ending)))
    latest = client_end_offsets(broker.bootstrap, TOPIC, PARTITIONS)
    expected = client_read(broker.bootstrap, TOPIC, {0: 3, 1: 0, 2: 250},
                           {0: 40, 1: latest[1], 2: 251})
    assert got == expected
    assert len(got) == 37 + 300 + 1


def test_per_partition_timestamps_match_client(spark, broker, events):
    t1, t2 = events["t1"], events["t2"]
    starting = {TOPIC: {"0": t1, "1": t2, "2": 0}}
    ending = {TOPIC: {"0": t2, "1": str(now_ms() + 60_000), "2": iso(t1)}}
    got = pairs(reader(spark, broker.bootstrap,
                       startingOffsetsByTimestamp=json.dumps(starting),
                       endingOffsetsByTimestamp=json.dumps(ending)))
    s1 = client_offsets_for_time(broker.bootstrap, TOPIC, PARTITIONS, t1)
    s2 = client_offsets_for_time(broker.bootstrap, TOPIC, PARTITIONS, t2)
    latest = client_end_offsets(broker.bootstrap, TOPIC, PARTITIONS)
    expected = client_read(broker.bootstrap, TOPIC, {0: s1[0], 1: s2[1], 2: 0},
                           {0: s2[0], 1: latest[1], 2: s1[2]})
    assert got == expected
    assert len(got) == 100 + 100 + 100


def test_precedence_global_timestamp_wins(spark, broker, events):
    t2 = events["t2"]
    got = pairs(reader(spark, broker.bootstrap, startingTimestamp=str(t2),
                       startingOffsetsByTimestamp=json.dumps({TOPIC: {"0": 0, "1": 0, "2": 0}}),
                       startingOffsets="earliest"))
    assert len(got) == 300
    got = pairs(reader(spark, broker.bootstrap,
                       startingOffsetsByTimestamp=json.dumps({TOPIC: {"0": t2, "1": t2,
                                                                      "2": t2}}),
                       startingOffsets="earliest"))
    assert len(got) == 300


def test_time_options_are_resolved_through_the_index_and_where_is_exact(
        spark, broker, events, plan_log):
    """startingTimestamp/endingTimestamp narrow the read to the index-resolved offsets; a
    ``where`` on timestamp gives the same rows with the session's pushdown conf on or off, but
    reads the whole range (a pushed plan would stay with the DataFrame, see docs/spark.md)."""
    t1, t2 = events["t1"], events["t2"]
    before = len(plan_entries(plan_log, "batch"))
    option_rows = pairs(reader(spark, broker.bootstrap, startingTimestamp=str(t1),
                               endingTimestamp=str(t2)))
    starts = client_offsets_for_time(broker.bootstrap, TOPIC, PARTITIONS, t1)
    ends = client_offsets_for_time(broker.bootstrap, TOPIC, PARTITIONS, t2)
    planned = plan_entries(plan_log, "batch")[before:]
    assert planned, "the reader wrote no plan"
    assert {(p, s, e) for _, p, s, e in planned[-1]["ranges"]} == \
        {(p, starts[p], ends[p]) for p in range(PARTITIONS)}
    assert option_rows == set(client_read(broker.bootstrap, TOPIC, starts, ends))

    lo = datetime.fromtimestamp(t1 / 1000, tz=timezone.utc)
    hi = datetime.fromtimestamp(t2 / 1000, tz=timezone.utc)
    hi_incl = datetime.fromtimestamp((t2 - 1) / 1000, tz=timezone.utc)
    for conf in ("true", "false"):
        spark.conf.set("spark.sql.python.filterPushdown.enabled", conf)
        try:
            df = reader(spark, broker.bootstrap).where(
                (F.col("timestamp") >= F.lit(lo)) & (F.col("timestamp") < F.lit(hi)))
            assert pairs(df) == option_rows
            df = reader(spark, broker.bootstrap).where(F.col("timestamp").between(lo, hi_incl))
            assert pairs(df) == option_rows
        finally:
            spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")


def test_min_partitions_and_max_records_per_partition(spark, broker, events):
    df = reader(spark, broker.bootstrap, minPartitions="7")
    assert df.rdd.getNumPartitions() >= 7
    assert pairs(df) == {(p, o) for p, o, _ in events["records"]}
    df = reader(spark, broker.bootstrap, maxRecordsPerPartition="50")
    assert df.rdd.getNumPartitions() == 18
    assert df.count() == 900


def test_no_match_strategies(spark, broker):
    topic = "skewed"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    old = produce(broker.bootstrap, topic, 20, 2)
    t = wait_for_next_ms(max(lat for _, _, lat in old))
    with Producer(broker.bootstrap) as producer:  # only partition 0 gets newer records
        for i in range(5):
            producer.send(topic, b"new-%d" % i, partition=0)
    with pytest.raises(Exception) as failure:
        reader(spark, broker.bootstrap, topic=topic, startingTimestamp=str(t)).collect()
    message = str(failure.value)
    assert "'skewed' partition 1" in message and str(t) in message and iso(t) in message
    assert "startingOffsetsByTimestampStrategy" in message
    got = pairs(reader(spark, broker.bootstrap, topic=topic, startingTimestamp=str(t),
                       startingOffsetsByTimestampStrategy="latest"))
    assert got == {(0, 10 + i) for i in range(5)}
    # The end side never fails: no match means the latest offset.
    got = pairs(reader(spark, broker.bootstrap, topic=topic,
                       endingTimestamp=str(now_ms() + 3_600_000)))
    assert len(got) == 25


def test_option_errors_are_clear(spark, broker, events):
    with pytest.raises(Exception, match="does not exist"):
        reader(spark, broker.bootstrap, topic="no-such-topic").collect()
    with pytest.raises(Exception, match="must list every subscribed partition"):
        reader(spark, broker.bootstrap,
               startingOffsets=json.dumps({TOPIC: {"0": 1}})).collect()
    with pytest.raises(Exception, match="partition ends at"):
        reader(spark, broker.bootstrap,
               endingOffsets=json.dumps({TOPIC: {"0": 10**6, "1": -1, "2": -1}})).collect()


def test_topic_pattern_and_topics_list(spark, broker, events):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("pattern-a", partitions=1)
        admin.create_topic("pattern-b", partitions=2)
    produce(broker.bootstrap, "pattern-a", 5, 1)
    produce(broker.bootstrap, "pattern-b", 6, 2)
    df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
          .option("topicPattern", "pattern-.*").load())
    assert sorted((r["topic"], r["partition"]) for r in
                  df.groupBy("topic", "partition").count().collect()) == [
        ("pattern-a", 0), ("pattern-b", 0), ("pattern-b", 1)]
    df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
          .option("topics", "pattern-a, pattern-b").load())
    assert df.count() == 11
    # Nothing to read at all (no topic matches): an empty DataFrame, not an error.
    df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
          .option("topicPattern", "nothing-matches-.*").load())
    assert df.count() == 0


# ---------------------------------------------------------------------------- data loss


def test_fail_on_data_loss(broker):
    """Retention deletes planned offsets between planning and reading (no Spark needed)."""
    topic = "retained"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=1, config={"segment.bytes": "2000"})
        with Producer(broker.bootstrap, linger_ms=0, batch_size=400) as producer:
            for i in range(200):
                producer.send(topic, b"x" * 40, partition=0)
                if i % 10 == 9:
                    producer.flush()
        options = {"bootstrap": broker.bootstrap, "topic": topic}
        source = TslogDataSource(options)
        planned = source.reader(source.schema()).partitions()
        assert [(p.value.start, p.value.end) for p in planned] == [(0, 200)]
        admin.alter_configs(topic, {"retention.bytes": "3000"})
        deadline = time.monotonic() + 20
        tp = TopicPartition(topic, 0)
        while admin.list_offsets({tp: -2})[tp].offset == 0:
            assert time.monotonic() < deadline, "retention did not run"
            time.sleep(0.1)
        log_start = admin.list_offsets({tp: -2})[tp].offset
    with pytest.raises(DataLossError) as failure:
        list(_read(planned[0]))
    message = str(failure.value)
    assert f"'{topic}' partition 0" in message and f"[0, {log_start})" in message
    assert "failOnDataLoss=false" in message

    lenient = TslogDataSource({**options, "failOnDataLoss": "false"})
    lenient_reader = lenient.reader(lenient.schema())
    spec = planned[0].value
    from dataclasses import replace

    from tslog.spark_connector import TslogPartition
    survivors = list(_read(TslogPartition(replace(spec, fail_on_data_loss=False))))
    offsets = [o for batch in survivors for o in batch.column("offset").to_pylist()]
    assert offsets == list(range(log_start, 200))
    # Planning again: a start below the log start is an error, or skipped with false.
    strict = TslogDataSource({**options, "startingOffsets": json.dumps({topic: {"0": 0}})})
    with pytest.raises(TslogPlanError, match="deleted by retention"):
        strict.reader(strict.schema()).partitions()
    assert lenient_reader.partitions()[0].value.start == log_start


# ---------------------------------------------------------------------------- streaming


def _progress_rows(query) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def test_stream_available_now_with_max_offsets_per_trigger(spark, broker, tmp_path):
    topic = "stream-limit"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    records = produce(broker.bootstrap, topic, 10, 2)
    df = (spark.readStream.format("tslog").option("bootstrap", broker.bootstrap)
          .option("topic", topic).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", "4").load())
    query = (df.writeStream.format("memory").queryName("limit_stream")
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert _progress_rows(query) == [4, 4, 2]
    got = {(r["partition"], r["offset"]) for r in spark.sql(
        "select partition, offset from limit_stream").collect()}
    assert got == {(p, o) for p, o, _ in records}
    end = query.lastProgress["sources"][0]["endOffset"]
    end = json.loads(end) if isinstance(end, str) else end
    assert end == {topic: {"0": 5, "1": 5}}


def test_stream_restart_from_checkpoint(spark, broker, tmp_path):
    topic = "stream-restart"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    first = produce(broker.bootstrap, topic, 40, 2)
    t = wait_for_next_ms(max(lat for _, _, lat in first))
    second = produce(broker.bootstrap, topic, 20, 2, start=40)
    out = tmp_path / "out"
    checkpoint = tmp_path / "cp"

    def run(starting_ts):
        df = (spark.readStream.format("tslog").option("bootstrap", broker.bootstrap)
              .option("topic", topic).option("startingTimestamp", str(starting_ts))
              .option("maxOffsetsPerTrigger", "15").load()
              .select("partition", "offset", "value"))
        query = (df.writeStream.format("parquet").option("path", str(out))
                 .option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        return query

    q1 = run(t)
    assert sum(_progress_rows(q1)) == 20
    third = produce(broker.bootstrap, topic, 30, 2, start=60)
    # A changed startingTimestamp is ignored on restart: the checkpoint wins.
    q2 = run(0)
    assert sum(_progress_rows(q2)) == 30
    rows = [(r["partition"], r["offset"]) for r in spark.read.parquet(str(out)).collect()]
    assert len(rows) == len(set(rows)) == 50
    assert set(rows) == {(p, o) for p, o, _ in second + third}


def test_stream_starting_timestamp_strategy(spark, broker, tmp_path):
    topic = "stream-nomatch"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    produce(broker.bootstrap, topic, 6, 2)
    future = now_ms() + 3_600_000

    def start(strategy, name):
        df = (spark.readStream.format("tslog").option("bootstrap", broker.bootstrap)
              .option("topic", topic).option("startingTimestamp", str(future))
              .option("startingOffsetsByTimestampStrategy", strategy).load())
        query = (df.writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / name))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        return query

    with pytest.raises(Exception) as failure:
        start("error", "nomatch_error")
    assert "partition 0" in str(failure.value) and str(future) in str(failure.value)
    query = start("latest", "nomatch_latest")
    assert query.exception() is None
    assert spark.sql("select * from nomatch_latest").count() == 0


# ------------------------------------------------- stream reader offsets (no Spark needed)


def stream_reader(bootstrap, topic, **options):
    source = TslogDataSource({"bootstrap": bootstrap, "topic": topic, **options})
    return source.streamReader(source.schema())


def test_stream_initial_offset_is_deterministic(broker):
    """A restart before the first commit resolves the same starting time to the same offsets."""
    topic = "stream-initial"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    before = produce(broker.bootstrap, topic, 10, 2)
    t = wait_for_next_ms(max(lat for _, _, lat in before))
    produce(broker.bootstrap, topic, 6, 2, start=10)
    first = stream_reader(broker.bootstrap, topic, startingTimestamp=str(t))
    offsets = first.initialOffset()
    assert offsets == {topic: {"0": 5, "1": 5}}
    produce(broker.bootstrap, topic, 8, 2, start=16)  # more data before the "restart"
    again = stream_reader(broker.bootstrap, topic, startingTimestamp=str(t))
    assert again.initialOffset() == offsets
    assert first.initialOffset() == offsets  # cached: Spark asks twice
    first.stop()
    again.stop()


def test_stream_read_limits(broker):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    topic = "stream-limits"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=2)
    with Producer(broker.bootstrap) as producer:
        for i in range(10):
            producer.send(topic, b"a", partition=0)
        for i in range(2):
            producer.send(topic, b"b", partition=1)
    reader = stream_reader(broker.bootstrap, topic, startingOffsets="earliest",
                           maxOffsetsPerTrigger="4")
    start = reader.initialOffset()
    assert reader.getDefaultReadLimit() == ReadMaxRows(4)
    # 10 and 2 new: floor(4*10/12) = 3, floor(4*2/12) = 0 -> at least 1.
    assert reader.latestOffset(start, ReadMaxRows(4)) == {topic: {"0": 3, "1": 1}}
    assert reader.latestOffset(start, ReadAllAvailable()) == {topic: {"0": 10, "1": 2}}
    assert reader.reportLatestOffset() == {topic: {"0": 10, "1": 2}}
    # No new data: the start comes back unchanged (Spark then runs no batch).
    end = {topic: {"0": 10, "1": 2}}
    assert reader.latestOffset(end, ReadMaxRows(4)) == end
    assert [(p.value.start, p.value.end) for p in reader.partitions(start, end)] == \
        [(0, 10), (0, 2)]
    assert reader.partitions(end, end) == []
    reader.stop()

    lazy = stream_reader(broker.bootstrap, topic, startingOffsets="earliest",
                         minOffsetsPerTrigger="100", maxTriggerDelay="300ms")
    start = lazy.initialOffset()
    assert lazy.getDefaultReadLimit() == ReadMinRows(100)
    assert lazy.latestOffset(start, ReadMinRows(100)) == start  # too few, delay not over
    time.sleep(0.35)
    assert lazy.latestOffset(start, ReadMinRows(100)) == {topic: {"0": 10, "1": 2}}
    lazy.stop()


def test_stream_available_now_pins_the_target(broker):
    from pyspark.sql.streaming.datasource import ReadMaxRows

    topic = "stream-pin"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=1)
    produce(broker.bootstrap, topic, 6, 1)
    reader = stream_reader(broker.bootstrap, topic, startingOffsets="earliest",
                           maxOffsetsPerTrigger="4", minOffsetsPerTrigger="2")
    reader.prepareForTriggerAvailableNow()
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadMaxRows(4))
    assert first == {topic: {"0": 4}}
    produce(broker.bootstrap, topic, 10, 1, start=6)  # after the pin: not part of this run
    second = reader.latestOffset(first, ReadMaxRows(4))
    assert second == {topic: {"0": 6}}  # fewer than minOffsetsPerTrigger, but no waiting
    assert reader.latestOffset(second, ReadMaxRows(4)) == second
    reader.stop()


def test_create_time_resolution(broker):
    """timestampType=create resolves through the create-time index."""
    topic = "create-times"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=1)
    base = now_ms() - 600_000
    with Producer(broker.bootstrap) as producer:
        for i in range(10):
            producer.send(topic, b"c%d" % i, partition=0, timestamp_ms=base + i * 1000)
    source = TslogDataSource({"bootstrap": broker.bootstrap, "topic": topic,
                              "timestampType": "create",
                              "startingTimestamp": str(base + 3500),
                              "endingTimestamp": str(base + 7000)})
    (part,) = source.reader(source.schema()).partitions()
    assert (part.value.start, part.value.end) == (4, 7)
    rows = [r for batch in _read(part) for r in batch.to_pylist()]
    assert [r["value"] for r in rows] == [b"c4", b"c5", b"c6"]
    assert [int(r["createTime"].timestamp() * 1000 + 0.5) for r in rows] == \
        [base + 4000, base + 5000, base + 6000]
