"""``send_batch`` does O(1) Python work per call, whatever the number of records: counted
with ``sys.setprofile`` (calls, not time), on a producer whose metadata is filled in by hand
and whose sender never gets to run (nothing is awaited), so no broker is involved.

Why a count: the batch path is the producer's hot path; splitting it into named functions
(issue 41: ``_batching.py``) must not add a Python call per record. The bound is today's count
with a little room: a change past it has added calls that every ``send_batch`` pays.
"""

import asyncio
import time

import pytest

from tests.helpers.python_calls import count_calls
from tslog.client._cluster import PartitionInfo
from tslog.client.aio import AsyncProducer


def producer() -> AsyncProducer:
    """A producer that believes topic "t" has 4 partitions led by an unreachable broker."""
    made = AsyncProducer("127.0.0.1:1", linger_ms=60_000, batch_size=1 << 30)
    cluster = made._cluster
    cluster.brokers = {0: ("127.0.0.1", 1)}
    cluster.topics = {"t": {p: PartitionInfo(p, 0, 0, [0], [0], 0) for p in range(4)}}
    cluster.topic_errors = {"t": 0}
    cluster._metadata_time = time.monotonic()
    return made


def python_calls(function, *args, **kwargs) -> int:
    """Python calls made by ``function`` itself (the collector off meanwhile)."""
    return count_calls(lambda: function(*args, **kwargs))[0]


def calls_for(count: int, **options) -> int:
    async def measure() -> int:
        sending = producer()
        values = [b"v" * 100] * count
        sending.send_batch("t", values, **options)  # the first call starts the sender
        return python_calls(sending.send_batch, "t", values, **options)
    return asyncio.run(measure())


@pytest.mark.parametrize("options", [{"partition": 0}, {}, {"headers": "each"}, {"keys": 1}],
                         ids=["one partition", "sticky", "headers", "keyed"])
def test_send_batch_makes_the_same_python_calls_for_10_records_as_for_1000(options):
    if options.get("headers") == "each":
        few = calls_for(10, headers=[[("h", b"x")]] * 10)
        many = calls_for(1000, headers=[[("h", b"x")]] * 1000)
    elif options.get("keys"):
        # past the loop's bound (KEY_LOOP_MAX = 32): grouped column-wise, a call per
        # partition (four here), not per record
        few = calls_for(100, keys=[b"k%d" % i for i in range(100)])
        many = calls_for(1000, keys=[b"k%d" % i for i in range(1000)])
    else:
        few, many = calls_for(10, **options), calls_for(1000, **options)
    assert few == many
    assert many <= (60 if options.get("keys") else 24), many
