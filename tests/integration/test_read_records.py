"""``Admin.read_records``: a look at a few records of many partitions (the console's find by
time), against a real broker.

What a user notices: exactly the records a consumer would get from the same offsets, up to
``limit`` of each partition, fewer where the partition ends; one Fetch for every partition
of a leader when the records fit the first round, nothing read ahead; the typed error for an
offset below the log start and for an unknown topic.

Method: one broker; a topic whose partitions hold one-record batches (linger 0) and one
multi-record batch, so a page may start in the middle of a batch; the oracle is a consumer
reading each partition from the same offset; the broker's own ``tslog_requests_total``
counts the Fetches.
"""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.broker_process import BrokerProcess, free_port
from tslog.client import Admin, Consumer, Producer, TopicPartition
from tslog.client.errors import OffsetOutOfRangeError, UnknownTopicOrPartitionError

pytestmark = pytest.mark.timeout(120)

TOPIC = "look"
PARTITIONS = 6


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    metrics = f"127.0.0.1:{free_port()}"
    process = BrokerProcess(tmp_path_factory.mktemp("read-records") / "broker",
                            config={"metrics_listen": metrics}).start()
    process.metrics_url = f"http://{metrics}/metrics"
    try:
        with Admin(process.bootstrap) as admin:
            admin.create_topic(TOPIC, partitions=PARTITIONS)
        with Producer(process.bootstrap, linger_ms=0) as producer:
            for i in range(8):  # one-record batches: 8 per partition
                for partition in range(PARTITIONS):
                    producer.send(TOPIC, f"v{partition}-{i}".encode(), key=b"k" if i % 2 else None,
                                  partition=partition, headers=[("i", bytes([i]))]).get(10)
            producer.send_batch(TOPIC, [f"b{j}".encode() for j in range(40)],
                                partition=0).get(10)  # offsets 8-47 of partition 0: one batch
        yield process
    finally:
        process.cleanup()


def fetches(broker) -> float:
    with urllib.request.urlopen(broker.metrics_url, timeout=30) as response:
        text = response.read().decode()
    return sum(sample.value for family in text_string_to_metric_families(text)
               for sample in family.samples
               if sample.name == "tslog_requests_total" and sample.labels["api"] == "fetch")


def consumed(broker, tp: TopicPartition, offset: int, limit: int) -> list:
    """The oracle: what a consumer reads from ``offset``, the first ``limit`` records."""
    with Consumer(broker.bootstrap, enable_auto_commit=False) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, offset)
        records = []
        while True:
            batch = consumer.poll(2000)
            records += batch
            if not batch or len(records) >= limit:
                return records[:limit]


@pytest.mark.parametrize("offset,limit", [(0, 1), (3, 4), (6, 10), (8, 0)])
def test_every_partition_gets_what_a_consumer_reads_from_the_same_offset(broker, offset,
                                                                         limit):
    positions = {TopicPartition(TOPIC, p): offset for p in range(PARTITIONS)}
    with Admin(broker.bootstrap) as admin:
        found = admin.read_records(positions, limit)
    for tp in positions:
        assert found[tp] == consumed(broker, tp, offset, limit)


def test_a_page_starting_inside_a_batch_takes_only_its_records(broker):
    tp = TopicPartition(TOPIC, 0)
    with Admin(broker.bootstrap) as admin:
        found = admin.read_records({tp: 20}, limit=5)[tp]
    assert [r.offset for r in found] == [20, 21, 22, 23, 24]
    assert [r.value for r in found] == [b"b12", b"b13", b"b14", b"b15", b"b16"]


def test_one_fetch_for_every_partition_and_nothing_read_ahead(broker):
    positions = {TopicPartition(TOPIC, p): 2 for p in range(PARTITIONS)}
    with Admin(broker.bootstrap) as admin:
        admin.describe_topic(TOPIC)
        before = fetches(broker)
        found = admin.read_records(positions, 1)
        after = fetches(broker)
    assert all(len(records) == 1 for records in found.values())
    assert after - before == 1


def test_the_typed_errors(broker):
    with Admin(broker.bootstrap) as admin:
        admin.delete_records({TopicPartition(TOPIC, 5): 2})
        with pytest.raises(OffsetOutOfRangeError, match=f"{TOPIC}-5"):
            admin.read_records({TopicPartition(TOPIC, 5): 0}, 1)
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.read_records({TopicPartition("no-such-topic", 0): 0}, 1)
        with pytest.raises(ValueError):
            admin.read_records({TopicPartition(TOPIC, 0): 0}, -1)
