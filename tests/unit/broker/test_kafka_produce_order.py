"""A connection's Produce requests reach the data service in arrival order even when a
large one converts in a worker thread: the small request after it must wait for it, or a
pipelining idempotent producer would see OUT_OF_ORDER_SEQUENCE. The service here
records what it is handed (the ordering is the adapter's job; appending is tested with a
real broker in tests/integration/kafka/test_kafka_large_requests.py)."""

from __future__ import annotations

import asyncio
import inspect
from types import SimpleNamespace

import pytest

from tslog.broker.data.requests import Appended
from tslog.broker.server.kafka import data_apis
from tslog.broker.server.kafka.services import ProduceOrder
from tslog.protocol.kafka import record_batch
from tslog.protocol.records import iter_records

pytestmark = pytest.mark.timeout(30)
INFO = SimpleNamespace(client_id="c", client_host="127.0.0.1", principal="User:ANONYMOUS")


def _body(tag: bytes, records: int, acks: int = 1) -> dict:
    batch = record_batch.encode_batch([tag * 200] * records, None, 5)
    return {"transactional_id": None, "acks": acks, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}


def _services(seen: list):
    def produce(request):
        """The data service's produce, recording the order batches reach it."""
        results = []
        for partition in request.partitions:
            batch = partition[2].batches[0].data  # its records: storage.ConvertedBatches
            seen.append(next(iter_records(batch)).value[:1])
            appended = Appended()
            appended.base_offset, appended.log_start_offset = len(seen), 0
            results.append(appended)
        return None if request.acks == 0 else results
    return SimpleNamespace(data=SimpleNamespace(produce=produce),
                           produce_order=ProduceOrder(),
                           timestamp_type=lambda topic, partition: "CreateTime",
                           batch_limit=lambda topic, partition: None)


def test_a_small_produce_after_a_large_one_is_appended_after_it():
    big = 2 * data_apis.OFF_LOOP_BYTES // 200

    async def run():
        seen: list = []
        services = _services(seen)
        answers = [data_apis.produce(services, body, 9, INFO)
                   for body in (_body(b"A", big), _body(b"B", 1), _body(b"C", big),
                                _body(b"D", 1))]
        assert all(inspect.isawaitable(answer) for answer in answers)
        assert seen == []  # nothing appended before the large one's conversion is done
        results = await asyncio.gather(*answers)
        assert seen == [b"A", b"B", b"C", b"D"]
        assert all(r["responses"][0]["partition_responses"][0]["error_code"] == 0
                   for r in results)
        assert services.produce_order.tail is None
        # Once the queue is empty, a small request is converted on the loop again.
        assert isinstance(data_apis.produce(services, _body(b"E", 1), 9, INFO), dict)
        assert seen[-1] == b"E"
    asyncio.run(run())


def test_a_large_acks_0_produce_converts_on_the_loop_and_answers_nothing():
    seen: list = []
    big = 2 * data_apis.OFF_LOOP_BYTES // 200
    assert data_apis.produce(_services(seen), _body(b"Z", big, acks=0), 9, INFO) is None
    assert seen == [b"Z"]


def test_a_corrupt_large_produce_is_refused_in_order_without_blocking_the_next():
    async def run():
        seen: list = []
        services = _services(seen)
        bad = _body(b"X", 2 * data_apis.OFF_LOOP_BYTES // 200)
        records = bytearray(bad["topic_data"][0]["partition_data"][0]["records"])
        records[-1] ^= 1  # the CRC no longer matches
        bad["topic_data"][0]["partition_data"][0]["records"] = bytes(records)
        first = data_apis.produce(services, bad, 9, INFO)
        second = data_apis.produce(services, _body(b"Y", 1), 9, INFO)
        refused, accepted = await first, await second
        assert refused["responses"][0]["partition_responses"][0]["error_code"] == 2
        assert accepted["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert seen == [b"Y"]
    asyncio.run(run())
