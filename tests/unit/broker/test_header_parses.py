"""A produced batch's header is parsed once on its way to disk, through either front door
(issue 41: it was decoded 3-4 times). Counted, not timed: every function that decodes a
batch header is wrapped while a real broker over a temporary directory handles a Produce
through its dispatch table (native) or through the Kafka listener's adapter (Kafka).

What counts as a parse: a decode of the 80-byte tslog header (``HEADER_STRUCT.unpack`` or
``unpack_from``, which ``parse_header`` and the storage readers call, wherever a module
holds it), the validation's first look (``_one_record.first_look``: one ``struct`` call that
reads the header and, for a plain one-record batch, vouches for it), and, on the Kafka port,
a decode of the Kafka batch's own header (``record_batch.HEADER``, which the one-record
conversion reads and hands to ``decode_batch_columns`` when it declines the batch): the tslog
header a conversion packs is handed to the log with the batch (``CheckedBatch``), so that
path has no tslog header decode at all.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from tests.helpers.handlers import call
from tslog.broker.server.kafka.dispatch import TABLE
from tslog.broker.server.kafka.services import KafkaServices, services_for
from tslog.protocol import batch_header
from tslog.protocol.kafka import codec, record_batch
from tslog.protocol.messages import ApiKey
from tslog.protocol.records import build_batch, iter_records

pytestmark = pytest.mark.timeout(60)


class _CountingStruct:
    """A header's ``struct.Struct`` with its decodes counted under ``kind``."""

    def __init__(self, real, counts: dict, kind: str = "tslog header") -> None:
        self._real, self._counts, self._kind = real, counts, kind

    def unpack_from(self, *args, **kwargs):
        self._counts[self._kind] += 1
        return self._real.unpack_from(*args, **kwargs)

    def unpack(self, *args):
        self._counts[self._kind] += 1
        return self._real.unpack(*args)

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.fixture
def parses(monkeypatch) -> dict:
    """Header decodes counted from here on: {"tslog header": n, "kafka header": n}."""
    counts = {"tslog header": 0, "kafka header": 0}
    real_struct = batch_header.HEADER_STRUCT
    for name, module in list(sys.modules.items()):
        if name.startswith("tslog.") and getattr(module, "HEADER_STRUCT", None) is real_struct:
            monkeypatch.setattr(module, "HEADER_STRUCT", _CountingStruct(real_struct, counts))
    look = batch_header.first_look

    def counted_look(batch):
        found = look(batch)
        counts["tslog header"] += found[0] is not None  # None: too short, nothing read
        return found
    monkeypatch.setattr(batch_header, "first_look", counted_look)
    kafka_struct = record_batch.HEADER
    for name, module in list(sys.modules.items()):
        if name.startswith("tslog.") and getattr(module, "HEADER", None) is kafka_struct:
            monkeypatch.setattr(module, "HEADER",
                                _CountingStruct(kafka_struct, counts, "kafka header"))
    counts.clear()
    counts.update({"tslog header": 0, "kafka header": 0})
    return counts


async def _topic(broker, name: str) -> None:
    body = {"timeout_ms": 1000, "topics": [{"topic": name, "partitions": 1,
                                            "replication_factor": 1, "configs": {}}]}
    assert (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]["error_code"] == 0


def _native_body(topic: str, records: bytes) -> dict:
    return {"acks": 1, "timeout_ms": 5000, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "records": records}]}]}


def _stored(broker, topic: str) -> list:
    return [record.value for record in iter_records(broker.topics.get_log(topic, 0).read(0))]


@pytest.mark.parametrize("count, idempotent", [(1, False), (1000, False), (1000, True)])
async def test_a_native_produce_parses_its_batch_header_once(broker, parses, count,
                                                             idempotent):
    await _topic(broker, "native")
    now = broker.clock.now_ms()
    producer = {"producer_id": 7, "producer_epoch": 0, "base_sequence": 0} if idempotent else {}
    batch = build_batch([b"v" * 100] * count, create_times=[now] * count, **producer)
    before = dict(parses)
    answer = await call(broker, ApiKey.PRODUCE, _native_body("native", batch))
    assert answer["topics"][0]["partitions"][0]["error_code"] == 0
    done = {kind: parses[kind] - before[kind] for kind in parses}
    assert done == {"tslog header": 1, "kafka header": 0}
    assert len(_stored(broker, "native")) == count  # it was appended


def _kafka_services(broker) -> KafkaServices:
    return services_for(broker, None)


@pytest.mark.parametrize("count, idempotent", [(1, False), (1000, False), (1000, True)])
async def test_a_kafka_produce_parses_its_batch_header_once(broker, parses, count, idempotent):
    """The Kafka batch's header is decoded once (to convert it); the tslog header the
    conversion packs travels with the batch to the log and is never decoded."""
    await _topic(broker, "kafka")
    now = broker.clock.now_ms()
    producer = {"producer_id": 7, "producer_epoch": 0, "base_sequence": 0} if idempotent else {}
    records = record_batch.encode_batch([b"v" * 100] * count, None, now, **producer)
    request = codec.decode_request(codec.encode_request(0, 9, 1, "count", {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
            {"name": "kafka", "partition_data": [{"index": 0, "records": records}]}]}))
    info = SimpleNamespace(client_id="count", client_host="127.0.0.1",
                           principal="User:ANONYMOUS")
    before = dict(parses)
    answer = TABLE[ApiKey.PRODUCE](_kafka_services(broker), request.body, 9, info)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    done = {kind: parses[kind] - before[kind] for kind in parses}
    assert done == {"tslog header": 0, "kafka header": 1}
    assert len(_stored(broker, "kafka")) == count


async def test_the_counter_sees_a_second_parse(broker, parses):
    """The wrappers are in the path: a fetch of the appended batch decodes no header, a
    follower-style check of it decodes one."""
    await _topic(broker, "seen")
    now = broker.clock.now_ms()
    await call(broker, ApiKey.PRODUCE, _native_body("seen", build_batch(
        [b"v"] * 3, create_times=[now] * 3)))
    before = parses["tslog header"]
    stored = broker.topics.get_log("seen", 0).read(0)
    batch_header.parse_header(stored)
    assert parses["tslog header"] == before + 1
