"""The Spark reader's ``startingTimestamp`` on a mirror's target topic (issue 39, item 3):
with ``timestampType=source`` the time is the source cluster's LogAppendTime, resolved
exactly (the mirror's lookup through the target's create-time index), so the DataFrame
holds exactly the target records whose ``tslog.mirror.lat`` header is >= T - checked
against a scan of the target, with the source and target brokers and the mirror real
processes."""

from __future__ import annotations

import random
import threading

import pytest

pytest.importorskip("pyspark")

from tests.helpers.broker_process import BrokerProcess  # noqa: E402
from tests.helpers.mirror import (MirrorProcess, copied_count, end_offsets,  # noqa: E402
                                  read_all, wait_for)
from tslog.client import Admin, Producer  # noqa: E402
from tslog.client.mirror import headers as reserved  # noqa: E402

TOPIC, PARTITIONS = "mirrored", 2


@pytest.mark.spark
def test_starting_timestamp_by_source_time_on_a_mirrored_topic(spark, broker, tmp_path):
    target = BrokerProcess(tmp_path / "target").start()  # ``broker`` is the source
    mirror = MirrorProcess(tmp_path / "mirror.log", "--source", broker.bootstrap, "--target",
                           target.bootstrap, "--topics", TOPIC)
    try:
        with Admin(broker.bootstrap) as admin:
            admin.create_topic(TOPIC, PARTITIONS)
        with Producer(broker.bootstrap) as producer:
            for n in range(40):  # CreateTimes from long ago: only source LATs count
                producer.send_batch(TOPIC, [b"%d-%d" % (n, i) for i in range(25)],
                                    partition=n % PARTITIONS,
                                    timestamp_ms=1_400_000_000_000 + n).get(timeout=30)
                threading.Event().wait(0.003)  # LATs move on between some batches
        mirror.start()
        expected = end_offsets(broker.bootstrap, TOPIC, PARTITIONS)
        wait_for(lambda: copied_count(target.bootstrap, TOPIC, PARTITIONS)
                 == sum(expected.values()), "the target to catch up", timeout_s=60)
        copied = read_all(target.bootstrap, TOPIC, PARTITIONS)
        lats = sorted({reserved.source_of(r.headers)[2] for p in copied for r in copied[p]})
        rng = random.Random(39)
        for timestamp in (rng.choice(lats), rng.choice(lats) + 1, lats[0]):
            wanted = {(p, r.offset) for p in copied for r in copied[p]
                      if reserved.source_of(r.headers)[2] >= timestamp}
            frame = (spark.read.format("tslog").option("bootstrap", target.bootstrap)
                     .option("topic", TOPIC).option("startingTimestamp", str(timestamp))
                     .option("timestampType", "source")
                     .option("startingOffsetsByTimestampStrategy", "latest").load())
            got = {(row.partition, row.offset) for row in frame.select("partition", "offset")
                   .collect()}
            assert got == wanted, timestamp
    finally:
        mirror.stop()
        target.cleanup()
