"""One DataFrame, many queries: each query returns exactly the rows of its own filters.

PySpark keeps the read it planned with the DataFrame's relation and, after a query whose
filters reached a Python reader, hands that read to the relation's later queries too. A reader
that narrowed its offsets to one query's timestamp bounds therefore returned those rows to an
unfiltered ``count()`` and to the other side of a self-join. These tests use one DataFrame for
a filtered query, an unfiltered one, one with other bounds and a join of two differently
filtered uses, in every order, with Python filter pushdown on and off, and compare each answer
with what ``tslog.client`` reads for the same range.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402

from tests.spark.test_spark_source import (  # noqa: E402
    client_offsets_for_time,
    client_read,
    produce,
    wait_for_next_ms,
)
from tslog.client import Admin  # noqa: E402

pytestmark = pytest.mark.spark

TOPIC = "reuse"
PARTITIONS = 2
PUSHDOWN = "spark.sql.python.filterPushdown.enabled"


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


@pytest.fixture(scope="module")
def phases(broker):
    """Three phases of 400 records; t1 and t2 are the first milliseconds after phases 1 and 2."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(TOPIC, partitions=PARTITIONS)
    first = produce(broker.bootstrap, TOPIC, 400, PARTITIONS)
    t1 = wait_for_next_ms(max(lat for _, _, lat in first))
    second = produce(broker.bootstrap, TOPIC, 400, PARTITIONS, start=400)
    t2 = wait_for_next_ms(max(lat for _, _, lat in second))
    produce(broker.bootstrap, TOPIC, 400, PARTITIONS, start=800)
    bootstrap = broker.bootstrap

    def client_rows(lo_ms=None, hi_ms=None) -> set:
        """What the client reads for LogAppendTime in [lo_ms, hi_ms)."""
        ends = client_offsets_for_time(bootstrap, TOPIC, PARTITIONS, 1 << 62)
        starts = (client_offsets_for_time(bootstrap, TOPIC, PARTITIONS, lo_ms)
                  if lo_ms is not None else {p: 0 for p in range(PARTITIONS)})
        if hi_ms is not None:
            ends = client_offsets_for_time(bootstrap, TOPIC, PARTITIONS, hi_ms)
        return client_read(bootstrap, TOPIC, starts, ends)

    return {"t1": t1, "t2": t2, "all": client_rows(), "early": client_rows(None, t1),
            "middle": client_rows(t1, t2), "late": client_rows(t2, None)}


def pairs(df) -> set:
    rows = df.select("partition", "offset").collect()
    found = {(r["partition"], r["offset"]) for r in rows}
    assert len(found) == len(rows), "a record was returned twice"
    return found


def uses(df, t1, t2):
    """The four uses of one DataFrame: name -> (action returning a set, expected key)."""
    middle = df.where((F.col("timestamp") >= F.lit(at(t1))) & (F.col("timestamp") < F.lit(at(t2))))
    late = df.where(F.col("timestamp") >= F.lit(at(t2)))
    early = df.where(F.col("timestamp") < F.lit(at(t1)))

    def join():
        # A self-join of two differently filtered uses, on partition: per partition it has
        # |middle| x |late| rows, so the distinct offsets counted on each side are exactly
        # how many records each filtered use read there. A plan leaking from one side to the
        # other (or from an earlier query) changes one of the counts.
        joined = (middle.select("partition", F.col("offset").alias("m"))
                  .join(late.select("partition", F.col("offset").alias("l")), "partition"))
        rows = joined.groupBy("partition").agg(F.countDistinct("m").alias("m"),
                                               F.countDistinct("l").alias("l")).collect()
        return {(r["partition"], r["m"], r["l"]) for r in rows}

    return {
        "filtered": lambda: pairs(middle),
        "unfiltered": lambda: pairs(df),
        "other-bounds": lambda: pairs(late) | pairs(early),
        "join": join,
    }


def expected(phases) -> dict:
    def per_partition(rows):
        counts = {}
        for p, _ in rows:
            counts[p] = counts.get(p, 0) + 1
        return counts

    middle, late = per_partition(phases["middle"]), per_partition(phases["late"])
    return {
        "filtered": phases["middle"],
        "unfiltered": phases["all"],
        "other-bounds": phases["late"] | phases["early"],
        "join": {(p, middle[p], late[p]) for p in range(PARTITIONS)},
    }


@pytest.mark.timeout(900)  # every order of a dataframe's uses: past the default timeout beside CI's other workers
@pytest.mark.parametrize("pushdown", ["true", "false"])
def test_every_order_of_uses_of_one_dataframe(spark, broker, phases, pushdown):
    want = expected(phases)
    assert len(phases["middle"]) == 400 and len(phases["all"]) == 1200
    spark.conf.set(PUSHDOWN, pushdown)
    try:
        for order in itertools.permutations(want):
            df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
                  .option("topic", TOPIC).load())
            actions = uses(df, phases["t1"], phases["t2"])
            for name in order:
                assert actions[name]() == want[name], f"{name} after {order}"
            # A query repeated after all the others still plans from its own filters.
            assert actions[order[0]]() == want[order[0]], f"{order[0]} again after {order}"
    finally:
        spark.conf.set(PUSHDOWN, "false")


def test_the_issue_example_counts(spark, broker, phases):
    """The reported sequence: filtered count, then the same DataFrame unfiltered."""
    spark.conf.set(PUSHDOWN, "true")
    try:
        df = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
              .option("topic", TOPIC).load())
        lo, hi = at(phases["t1"]), at(phases["t2"])
        assert df.where((F.col("timestamp") >= lo) & (F.col("timestamp") < hi)).count() == 400
        assert df.count() == 1200
        assert (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
                .option("topic", TOPIC).load().count()) == 1200
    finally:
        spark.conf.set(PUSHDOWN, "false")


def test_stream_started_after_its_batch_twin_was_filtered(spark, broker, phases, tmp_path):
    spark.conf.set(PUSHDOWN, "true")
    try:
        batch = (spark.read.format("tslog").option("bootstrap", broker.bootstrap)
                 .option("topic", TOPIC).option("startingOffsets", "earliest").load())
        middle = batch.where((F.col("timestamp") >= F.lit(at(phases["t1"])))
                             & (F.col("timestamp") < F.lit(at(phases["t2"]))))
        assert pairs(middle) == phases["middle"]
        stream = (spark.readStream.format("tslog").option("bootstrap", broker.bootstrap)
                  .option("topic", TOPIC).option("startingOffsets", "earliest").load())
        query = (stream.writeStream.format("memory").queryName("reuse_twin")
                 .option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
        assert query.awaitTermination(120)
        got = spark.sql("select partition, offset from reuse_twin").collect()
        assert {(r["partition"], r["offset"]) for r in got} == phases["all"]
        assert len(got) == len(phases["all"])
        # And the batch twin, used again unfiltered, still reads everything.
        assert pairs(batch) == phases["all"]
    finally:
        spark.conf.set(PUSHDOWN, "false")
