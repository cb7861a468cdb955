"""Large Fetch answers reuse the broker's memory instead of fresh pages each time.

Goal: a follower catching up or a consumer far behind reads megabytes per request; the broker
must not pay the kernel for new, zeroed pages on every answer (``broker/allocator.py``).
Method: a real broker process holding 8 MB in one partition; the whole partition fetched ten
times in one request each; the broker's minor page faults, from /proc, over the last nine.
With glibc's default settings the broker faults in about 200 fresh pages per answer here.
"""

from __future__ import annotations

import sys

import pytest

from tests.helpers.wire import Wire, batch
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/<pid>/stat")

BATCHES = 8
RECORDS_PER_BATCH = 1000
VALUE = b"v" * 1000


def minor_faults(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[7])


def test_repeated_large_fetches_fault_in_no_fresh_memory(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.create_topic("big") == 0
        for _ in range(BATCHES):
            written = wire.produce("big", 0, batch([VALUE] * RECORDS_PER_BATCH), acks=1)
            assert written["error_code"] == 0
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 16 << 20,
                "topics": [{"topic": "big", "partitions": [
                    {"partition": 0, "fetch_offset": 0, "max_bytes": 16 << 20}]}]}
        first = wire.request(ApiKey.FETCH, body)["topics"][0]["partitions"][0]
        assert len(first["records"]) > BATCHES * RECORDS_PER_BATCH * len(VALUE)
        before = minor_faults(broker.process.pid)
        for _ in range(9):
            answer = wire.request(ApiKey.FETCH, body)["topics"][0]["partitions"][0]
            assert answer["records"] == first["records"]
        faults = minor_faults(broker.process.pid) - before
    assert faults < 100  # glibc's defaults: about 1,950 (0 with the broker's settings)
