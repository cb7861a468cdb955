"""The data service's answers a client acts on, through tslog's handlers on a real broker
(no sockets): what a Fetch out of range tells the client, on both sides of the log."""

from __future__ import annotations

import pytest

from tests.helpers.handlers import call
from tests.helpers.wire import batch
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(60)


async def fetch_at(broker, offset: int) -> dict:
    answer = await call(broker, ApiKey.FETCH, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "fetch_offset": offset, "max_bytes": 1 << 20}]}]})
    return answer["topics"][0]["partitions"][0]


async def test_a_fetch_out_of_range_says_where_the_log_starts_and_ends(broker):
    """A reader whose offset retention deleted (or that is past the end) learns the log's
    start and high watermark from the refusal itself, as from Kafka's, and moves on."""
    created = await call(broker, ApiKey.CREATE_TOPICS, {"topics": [{
        "topic": "t", "partitions": 1, "replication_factor": 1, "configs": {}}],
        "timeout_ms": 1000})
    assert created["topics"][0]["error_code"] == 0
    for _ in range(3):
        await call(broker, ApiKey.PRODUCE, {"acks": 1, "timeout_ms": 1000, "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "records": batch([b"a", b"b"])}]}]})
    deleted = await call(broker, ApiKey.DELETE_RECORDS, {"timeout_ms": 1000, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "offset": 2}]}]})
    assert deleted["topics"][0]["partitions"][0]["error_code"] == 0
    for offset in (0, 7):  # below the log start, past the end
        refused = await fetch_at(broker, offset)
        assert refused["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert (refused["log_start_offset"], refused["high_watermark"]) == (2, 6)
        assert refused["records"] == b""
    served = await fetch_at(broker, 2)
    assert (served["error_code"], served["log_start_offset"], served["high_watermark"]) == (
        0, 2, 6)
