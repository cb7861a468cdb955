"""Batches that lie about their records, sent to a real broker process (issue 20, item 1).

Goal: what a user notices. Before, a 5-record batch whose header claimed 2^31 - 1 records was
acknowledged, the log end jumped to 2,147,483,648, and every consumer of the partition stopped
there with CorruptMessageError, also after a restart. Now each lie must be answered with
CORRUPT_MESSAGE, leave the log end where it was, and leave the broker serving: a normal client
produces after it, and a consumer reads every acknowledged record, before and after a crash.
Method: raw-socket produces of the lies (``tests/helpers/batches.py``, CRCs recomputed), the
public client for everything a user would do, and the broker's log for tracebacks.
"""

from __future__ import annotations

import time

import pytest

from tests.helpers.batches import LIES, issue_lie, with_header, zstd_bomb
from tests.helpers.wire import Wire, batch
from tslog.client import Admin, Consumer, Producer
from tslog.protocol.errors import ErrorCode
from tslog.protocol.records import MAX_UNCOMPRESSED_BYTES

pytestmark = pytest.mark.timeout(90)

TOPIC = "events"


def produce_honest(bootstrap: str, first: int, count: int) -> list[int]:
    """Produce ``count`` records with the public client (acks=all); return their offsets."""
    with Producer(bootstrap, acks="all", linger_ms=1) as producer:
        futures = [producer.send(TOPIC, b"honest-%d" % i) for i in range(first, first + count)]
        producer.flush()
        return [future.get(10).offset for future in futures]


def consume_everything(bootstrap: str, count: int, timeout_s: float = 20.0) -> list:
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.subscribe([TOPIC])
        records: list = []
        deadline = time.monotonic() + timeout_s
        while len(records) < count and time.monotonic() < deadline:
            records += consumer.poll(200)  # raises CorruptMessageError on a poisoned batch
        records += consumer.poll(100)
    return records


def assert_reads_exactly(bootstrap: str, offsets: list[int]) -> None:
    records = consume_everything(bootstrap, len(offsets))
    assert [record.offset for record in records] == offsets
    assert [record.value for record in records] == [b"honest-%d" % i for i in range(len(offsets))]


@pytest.fixture
def topic(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic(TOPIC)
    return broker


def test_the_issue_batch_is_refused_and_the_partition_stays_readable(topic):
    broker = topic
    acknowledged = produce_honest(broker.bootstrap, 0, 5)
    with Wire(broker.host, broker.port) as wire:
        answer = wire.produce(TOPIC, 0, issue_lie())
        assert answer["error_code"] == ErrorCode.CORRUPT_MESSAGE
        assert answer["base_offset"] == -1
        assert wire.log_end_offset(TOPIC) == 5  # not 2,147,483,652
    acknowledged += produce_honest(broker.bootstrap, 5, 5)
    assert acknowledged == list(range(10))
    assert_reads_exactly(broker.bootstrap, acknowledged)
    broker.restart(kill=True)  # recovery must find nothing to stop at either
    assert_reads_exactly(broker.bootstrap, acknowledged)
    assert produce_honest(broker.bootstrap, 10, 1) == [10]
    assert "Traceback" not in broker.log_text()


def every_lie() -> dict[str, bytes]:
    lies = {name: make() for name, make in LIES.items()}
    lies["idempotent_record_count_2^31-1"] = with_header(
        issue_lie(), producer_id=0, producer_epoch=0, base_sequence=0)
    lies["zstd_bomb_declared"] = zstd_bomb(MAX_UNCOMPRESSED_BYTES + 1)
    lies["zstd_bomb_undeclared"] = zstd_bomb(MAX_UNCOMPRESSED_BYTES + 1, declare_size=False)
    return lies


def test_every_lie_is_refused_with_corrupt_message_and_writes_nothing(topic):
    broker = topic
    acknowledged = produce_honest(broker.bootstrap, 0, 3)
    with Wire(broker.host, broker.port) as wire:
        for name, lie in every_lie().items():
            answer = wire.produce(TOPIC, 0, lie)
            assert answer["error_code"] == ErrorCode.CORRUPT_MESSAGE, name
            assert wire.log_end_offset(TOPIC) == 3, name
        # A lie among honest batches refuses the whole request: nothing of it is written.
        answer = wire.produce(TOPIC, 0, batch([b"a"]) + issue_lie() + batch([b"b"]))
        assert answer["error_code"] == ErrorCode.CORRUPT_MESSAGE
        wire.produce(TOPIC, 0, issue_lie(), acks=0)  # no answer, and nothing written either
        assert wire.api_versions()["error_code"] == 0  # the same connection still works
        assert wire.log_end_offset(TOPIC) == 3
    acknowledged += produce_honest(broker.bootstrap, 3, 2)
    assert_reads_exactly(broker.bootstrap, acknowledged)
    assert "Traceback" not in broker.log_text()
    assert broker.log_text().count("CORRUPT_MESSAGE") >= len(every_lie()) + 1
