"""The idempotent producer against a real single-node broker.

What a user notices: with ``enable_idempotence`` (the default with acks="all") every record
is written once, in send order per partition, and the batches on disk carry the producer id and contiguous
sequences the broker checks (the failover test in test_replication_failover.py shows the
retries it makes safe). Two producers get different ids, and a restarted broker keeps
handing out ids it never gave before, so a new producer is never taken for an old one.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.replication import consume_all
from tslog.broker.storage.headers import headers_from
from tslog.broker.storage import PartitionLog
from tslog.client import Admin, Producer
from tslog.client.errors import InvalidTimestampError


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


def unread_request_bytes(port: int) -> int:
    """Bytes the kernel holds for the broker on ``port``'s connections that it has not read
    (the receive queues of its established IPv4 sockets, from /proc/net/tcp)."""
    total = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":  # ESTABLISHED
            total += int(fields[4].split(":")[1], 16)
    return total


def test_an_idempotent_producer_keeps_five_batches_of_a_partition_in_flight(broker):
    """What acks="all" producers gained (one batch at a time made each wait for its own
    fsync): with the broker frozen, the producer sends five batches of one partition and
    no more, even with room for ten requests on the connection; thawed, the broker writes
    all twelve in send order."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("pipelined")
    value = b"x" * 4000
    with Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=4500,
                  max_in_flight=10) as producer:
        producer.send("pipelined", b"first").get(10)  # the leader knows the producer id
        os.kill(broker.process.pid, signal.SIGSTOP)
        try:
            futures = [producer.send("pipelined", value + b"%02d" % i) for i in range(12)]
            unread, deadline = -1, time.monotonic() + 5
            while time.monotonic() < deadline:  # until the producer stops sending
                time.sleep(0.5)
                unread, seen = unread_request_bytes(broker.port), unread
                if unread == seen:
                    break
        finally:
            os.kill(broker.process.pid, signal.SIGCONT)
        offsets = [future.get(30).offset for future in futures]
    assert 5 * len(value) < unread < 6 * len(value)
    assert offsets == list(range(1, 13))


@pytest.mark.parametrize("frozen", [True, False], ids=["killed-frozen", "killed-running"])
def test_a_broker_killed_under_a_pipelining_producer_loses_duplicates_and_reorders_nothing(
        broker, frozen):
    """SIGKILL with batches in flight (all five unread when ``frozen``; written or not, in
    any mix, when killed while running): the producer retries them in their send order
    after the restart; the log then holds every record once, in send order, at the offsets
    the producer reported."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("killed")
    sent: list = []
    stop = threading.Event()
    producer = Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=2048)

    def write() -> None:
        i = 0
        while not stop.is_set() and i < 20_000:
            value = b"v%06d" % i
            sent.append((value, producer.send("killed", value * 50)))
            i += 1
            if i % 20 == 0:
                time.sleep(0.001)

    try:
        writer = threading.Thread(target=write)
        writer.start()
        while len(sent) < 2000:
            time.sleep(0.01)
        if frozen:
            os.kill(broker.process.pid, signal.SIGSTOP)
            time.sleep(0.3)
        broker.restart(kill=True)
        time.sleep(0.5)
        stop.set()
        writer.join(30)
        producer.flush(60_000)
        acknowledged = [(value, future.get(0).offset) for value, future in sent]
    finally:
        stop.set()
        producer.close()
    records = consume_all(broker.bootstrap, "killed", len(sent))
    assert [record.value[:7] for record in records] == [value for value, _ in sent]
    assert [offset for _, offset in acknowledged] == list(range(len(sent)))


def test_a_refused_batch_does_not_take_the_batches_pipelined_behind_it_down(broker):
    """One batch of five in flight is refused for good (a CreateTime the topic does not take):
    the leader refuses the four behind it as out of sequence, and the producer sends them
    again under a new producer id. The user sees the one typed error and four records
    written in send order, not five failures."""
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("refused", config={"message.timestamp.before.max.ms": "60000"})
    value = b"x" * 4000
    with Producer(broker.bootstrap, acks="all", linger_ms=0, batch_size=4500) as producer:
        producer.send("refused", b"first").get(10)
        os.kill(broker.process.pid, signal.SIGSTOP)
        try:
            stale = producer.send("refused", value, timestamp_ms=int(time.time() * 1000)
                                  - 3_600_000)
            futures = [producer.send("refused", value + b"%d" % i) for i in range(4)]
            time.sleep(0.5)
        finally:
            os.kill(broker.process.pid, signal.SIGCONT)
        with pytest.raises(InvalidTimestampError):
            stale.get(30)
        offsets = [future.get(30).offset for future in futures]
    assert offsets == [1, 2, 3, 4]
    records = consume_all(broker.bootstrap, "refused", 5)
    assert [record.value for record in records[1:]] == [value + b"%d" % i for i in range(4)]
