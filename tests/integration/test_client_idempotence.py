"""The idempotent producer against a real single-node broker.

What a user notices: with ``enable_idempotence`` (the default with acks="all") every record
is written once, in send order per partition, and the batches on disk carry the producer id and contiguous
sequences the broker checks (the failover test in test_replication_failover.py shows the
retries it makes safe). Two producers get different ids, and a restarted broker keeps
handing out ids it never gave before, so a new producer is never taken for an old one.
"""

from __future__ import annotations

import pytest

from tslog.broker.storage.headers import headers_from
from tslog.broker.storage import PartitionLog
from tslog.client import Admin, Producer


def headers_on_disk(broker, topic, partition=0):
    plog = PartitionLog(broker.data_dir / f"{topic}-{partition}")
    try:
        return list(headers_from(plog, 0))
    finally:
        plog.close_handles()


def produce(bootstrap, topic, count, partitions=1):
    with Producer(bootstrap, acks="all", enable_idempotence=True, linger_ms=1,
                  batch_size=2048) as producer:
        futures = [producer.send(topic, b"v%d" % i, partition=i % partitions)
                   for i in range(count)]
        producer.flush()
        return [f.get(10) for f in futures]


def test_every_record_once_in_order_with_contiguous_sequences(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("idem", partitions=2)
    metadata = produce(broker.bootstrap, "idem", 4000, partitions=2)
    for partition in (0, 1):
        offsets = [m.offset for m in metadata if m.partition == partition]
        assert offsets == list(range(2000))
    broker.terminate()
    for partition in (0, 1):
        headers = headers_on_disk(broker, "idem", partition)
        assert len({h.producer_id for h in headers}) == 1 and headers[0].producer_id >= 0
        sequence = 0
        for header in headers:
            assert header.base_sequence == sequence
            sequence += header.record_count
        assert sequence == 2000


def test_producers_get_distinct_ids_also_after_a_restart(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("ids")
    produce(broker.bootstrap, "ids", 10)
    produce(broker.bootstrap, "ids", 10)
    broker.restart()
    produce(broker.bootstrap, "ids", 10)
    broker.terminate()
    ids = [h.producer_id for h in headers_on_disk(broker, "ids")]
    assert len(set(ids)) == 3


def test_idempotence_requires_acks_all():
    with pytest.raises(ValueError, match="acks"):
        Producer("127.0.0.1:1", acks=1, enable_idempotence=True)



def test_a_default_producer_is_idempotent_and_acks_1_is_not(broker):
    """As Kafka's since 3.0: the default (acks="all") stamps producer ids and sequences, so
    a retry after a broker restart cannot write a batch twice; acks=1 does not."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("defaults")
    with Producer(broker.bootstrap) as producer:
        producer.send("defaults", b"idempotent").get(10)
    with Producer(broker.bootstrap, acks=1) as producer:
        producer.send("defaults", b"plain").get(10)
    broker.terminate()
    first, second = headers_on_disk(broker, "defaults")
    assert first.producer_id >= 0 and first.base_sequence == 0
    assert second.producer_id == -1 and second.base_sequence == -1
