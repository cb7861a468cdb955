"""Size limits end to end: a producer never sends a request the broker must refuse by closing
the connection, and a Fetch answer is as large as the request asked for, no larger.

Goal: a user who configures ``batch_size`` above what one request may carry gets records
delivered in smaller batches (or ``MessageTooLargeError`` for a record that cannot fit),
never a ``ConnectionLostError``; a consumer asking for small fetches gets small answers, but
always at least one whole batch, so it cannot get stuck behind a large one (Kafka's rule).
Method: real broker subprocesses, one with a small ``max_frame_bytes``; the public client for
producing and the raw wire for fetching (so the sizes asked for are exactly the ones sent).
"""

from __future__ import annotations

import pytest

from tests.helpers.wire import Wire, batch
from tslog.client import Admin, Producer
from tslog.client.errors import MessageTooLargeError
from tslog.protocol.records import split_batches

from .test_client_produce_consume import consume_all

FRAME_LIMIT = 256 * 1024


def test_oversized_batch_size_is_capped_at_the_request_size(broker_factory):
    broker = broker_factory(env={"TSLOG_MAX_FRAME_BYTES": str(FRAME_LIMIT)})
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("capped", partitions=1)
    values = [bytes([i % 251]) * 1000 for i in range(1500)]  # 1.5 MB, six frames' worth
    with Producer(broker.bootstrap, max_request_size=FRAME_LIMIT, batch_size=8 << 20,
                  linger_ms=50) as producer:
        futures = [producer.send("capped", value, partition=0) for value in values]
        batch_future = producer.send_batch("capped", values, partition=0)
        offsets = [future.get(30).offset for future in futures]
        offsets += [metadata.offset for metadata in batch_future.get(30)]
    assert offsets == list(range(3000))
    assert [r.value for r in consume_all(broker.bootstrap, "capped", 3000)] == values + values


def test_a_record_larger_than_a_request_is_refused_before_sending(broker_factory):
    broker = broker_factory(env={"TSLOG_MAX_FRAME_BYTES": str(FRAME_LIMIT)})
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("big", partitions=1)
    with Producer(broker.bootstrap, max_request_size=FRAME_LIMIT) as producer:
        with pytest.raises(MessageTooLargeError):
            producer.send("big", b"x" * FRAME_LIMIT)
        with pytest.raises(MessageTooLargeError):
            producer.send_batch("big", [b"x" * FRAME_LIMIT])
        assert producer.send("big", b"small").get(10).offset == 0  # still connected


def _fill(wire: Wire, topic: str, batches: int, values_per_batch: int) -> int:
    for _ in range(batches):
        part = wire.produce(topic, 0, batch([b"v" * 100] * values_per_batch))
        assert part["error_code"] == 0
    return len(batch([b"v" * 100] * values_per_batch))


def _fetch(wire: Wire, topic: str, max_bytes: int, partition_max_bytes: int) -> list:
    from tslog.protocol.messages import ApiKey
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes,
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "fetch_offset": 0, "max_bytes": partition_max_bytes}]}]}
    part = wire.request(ApiKey.FETCH, body)["topics"][0]["partitions"][0]
    assert part["error_code"] == 0
    return split_batches(part["records"])


def test_fetch_answers_are_bounded_by_what_the_request_asked(broker):
    with Wire(broker.host, broker.port) as wire:
        wire.create_topic("sized", 1)
        size = _fill(wire, "sized", 10, 100)  # ten batches of ~11 KB
        assert len(_fetch(wire, "sized", 10 * size, 10 * size)) == 10
        assert len(_fetch(wire, "sized", 3 * size + 10, 10 * size)) == 3  # request max_bytes
        assert len(_fetch(wire, "sized", 10 * size, 2 * size + 10)) == 2  # partition max_bytes
        # Smaller than one batch: still one whole batch, or the consumer could never advance.
        assert len(_fetch(wire, "sized", 1, 10 * size)) == 1
        assert len(_fetch(wire, "sized", 10 * size, 1)) == 1
        assert len(_fetch(wire, "sized", 0, 0)) == 1
