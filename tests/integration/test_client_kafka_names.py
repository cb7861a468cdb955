"""kafka-python's names on tslog's client objects, so a Kafka user's code keeps working: a
producer future's ``result(timeout)`` and a concurrent future for ``wait``/``as_completed``,
and a consumed record's ``timestamp`` / ``timestamp_type``."""

from __future__ import annotations

import concurrent.futures

from tslog.client import Admin, Consumer, Producer, TopicPartition


def test_producer_futures_answer_result_and_work_with_concurrent_futures(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("names", partitions=2)
    with Producer(broker.bootstrap, linger_ms=1) as producer:
        first = producer.send("names", b"a", partition=0)
        assert first.result(10).offset == 0
        batch = producer.send_batch("names", [b"b", b"c"], partition=1)
        more = [producer.send("names", b"d%d" % i, partition=0) for i in range(5)]
        chained = {producer_future.as_concurrent_future(): producer_future
                   for producer_future in [batch, *more]}
        done, pending = concurrent.futures.wait(chained, timeout=10)
        assert not pending and len(done) == 6
        completed = [f.result() for f in concurrent.futures.as_completed(chained, timeout=10)]
    assert sorted(m.offset for m in completed if not isinstance(m, list)) == [1, 2, 3, 4, 5]
    assert [m.offset for m in batch.result(0)] == [0, 1]


def test_a_failed_send_fails_its_concurrent_future_too(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("small", config={"max.message.bytes": "1000"})
    with Producer(broker.bootstrap, linger_ms=1) as producer:
        future = producer.send("small", b"x" * 5000)  # the broker refuses it
        chained = future.as_concurrent_future()
        concurrent.futures.wait([chained], timeout=10)
    assert chained.done() and chained.exception() is not None
    assert type(chained.exception()) is type(future.exception(0))


def test_consumed_records_carry_timestamp_and_its_type(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("stamped")
    with Producer(broker.bootstrap) as producer:
        appended = producer.send("stamped", b"v").result(10)
    with Consumer(broker.bootstrap) as consumer:
        consumer.assign([TopicPartition("stamped", 0)])
        consumer.seek_to_beginning()
        [record] = consumer.poll(timeout_ms=5000)
    assert record.timestamp == record.log_append_time == appended.log_append_time
    assert record.timestamp_type == 1  # kafka-python's TIMESTAMP_TYPE_LOG_APPEND_TIME
