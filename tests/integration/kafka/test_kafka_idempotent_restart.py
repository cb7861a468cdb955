"""librdkafka's idempotent producer (confluent-kafka, ``enable.idempotence=true``,
``acks=all``) keeps producing numbered records while the broker behind the Kafka listener is
stopped and started again on the same ports and data directory: by SIGTERM (a clean
shutdown) and by SIGKILL (a crash). Afterwards tslog's own consumer reads every record
exactly once, in the order sent per partition, and librdkafka reported no error.

Why nothing may be duplicated or lost: librdkafka resends a batch whose answer the restart
swallowed with the same producer id and sequence numbers, and the broker rebuilds each
partition's producer state (the last five batches per producer) from its ``producer-state``
snapshot and the batch headers after it (docs/storage-format.md), so it recognises the
resend as a duplicate; an acks=all answer on a single node comes after the group-commit fsync,
and a SIGKILL kills the process, not the machine, so whatever was acknowledged is on disk.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import Producer as ConfluentProducer

from tests.helpers.broker_process import free_port
from tslog.broker.storage import PartitionLog
from tslog.broker.storage.headers import headers_from
from tslog.client import Admin, Consumer, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]  # two broker restarts, ~4 s each

PARTITIONS = 2
COUNT = 2000


def _produce_numbered(bootstrap: str, topic: str, started: threading.Event, done: dict) -> None:
    """Send COUNT numbered records, record i to partition i % PARTITIONS, paced over about
    2 s; ``started`` is set once 100 are acknowledged, so the restart lands in the middle.
    Collect every delivery error and fatal error."""
    producer = ConfluentProducer({
        "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
        "linger.ms": 5, "batch.num.messages": 50, "message.timeout.ms": 60_000,
        "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
        # Connection refused while the broker is down is expected and retried; only a fatal
        # error (the idempotent producer giving up, e.g. OUT_OF_ORDER_SEQUENCE) counts.
        "error_cb": lambda err: err.fatal() and done["errors"].append(("fatal", err))})
    try:
        for i in range(COUNT):
            producer.produce(topic, b"%d" % i, b"k%d" % i, partition=i % PARTITIONS,
                             on_delivery=lambda err, msg: done["errors"].append(
                                 ("delivery", err)) if err else done["delivered"].append(msg.offset()))
            producer.poll(0)
            done["produced"] = i + 1
            if i % 10 == 9:
                time.sleep(0.01)
            if len(done["delivered"]) >= 100:
                started.set()
        done["unflushed"] = producer.flush(60)
    except KafkaException as exc:  # a fatal idempotence error raises here
        done["errors"].append(("raised", exc))
    finally:
        started.set()


def _read_all(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    out = {}
    with Consumer(bootstrap) as consumer:
        for partition in range(PARTITIONS):
            tp = TopicPartition(topic, partition)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            end = consumer.end_offsets([tp])[tp]
            records = []
            deadline = time.monotonic() + 10
            while (not records or records[-1].offset < end - 1) and \
                    time.monotonic() < deadline:
                records += consumer.poll(500)
            out[partition] = [r.value for r in records]
    return out


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
def test_idempotent_librdkafka_producer_across_a_restart_writes_each_record_once(
        broker_factory, kill):
    kafka_port = free_port()
    broker = broker_factory(args=["--kafka-listen", f"127.0.0.1:{kafka_port}"])
    topic = "idem-restart"
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(topic, partitions=PARTITIONS)
    started, done = threading.Event(), {"errors": [], "delivered": [], "produced": 0}
    thread = threading.Thread(target=_produce_numbered, daemon=True,
                              args=(f"127.0.0.1:{kafka_port}", topic, started, done))
    thread.start()
    assert started.wait(30)
    before = len(done["delivered"])
    broker.restart(kill=kill)
    produced = done["produced"]
    thread.join(90)
    assert not thread.is_alive()
    assert done["errors"] == [] and done["unflushed"] == 0, done
    # The restart fell mid-stream: records were acknowledged before it and others were not,
    # so the producer carried unacknowledged records across it. (Not whether it was still
    # calling produce() when the broker came back: that depends on how long the restart
    # takes on a loaded machine, not on anything the broker does.)
    assert 100 <= before < COUNT, (before, produced)
    got = _read_all(broker.bootstrap, topic)
    for partition in range(PARTITIONS):
        assert got[partition] == [b"%d" % i for i in range(partition, COUNT, PARTITIONS)], \
            (partition, len(got[partition]))
    # librdkafka kept its producer id and epoch across the restart: the broker took its
    # sequence numbers up where they were, without a new InitProducerId.
    broker.terminate()
    for partition in range(PARTITIONS):
        plog = PartitionLog(broker.data_dir / f"{topic}-{partition}")
        try:
            ids = {(h.producer_id, h.producer_epoch) for h in headers_from(plog, 0)}
        finally:
            plog.close_handles()
        assert len(ids) == 1 and min(ids)[0] >= 0, ids
