"""The lease rule: a leader whose session may have expired acknowledges nothing.

``LeaseClock`` (``broker/cluster/session.py``) says whether the lease is surely alive: until
the send time of the last renewal etcd confirmed, plus its TTL, less a margin. The produce
path asks the view (``may_acknowledge``) before it appends (acks=1 and acks=all alike) and
again before it answers an acks=all produce that waited for its followers. The handlers run
here against the in-memory test double of the view, whose ``lease_valid`` plays the clock.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.helpers.cluster_view import MemoryClusterView
from tests.helpers.handlers import call
from tests.helpers.wire import batch
from tslog.broker.cluster.session import LeaseClock, lease_margin_s
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(30)


def test_the_clock_is_valid_until_ttl_less_the_margin_after_the_renewal_was_sent():
    clock = LeaseClock()
    assert not clock.valid()  # nothing granted yet
    now = time.monotonic()
    clock.renewed(now, 10)
    assert clock.valid() and clock.valid_until == now + 10 - lease_margin_s(10)
    clock.renewed(now - 100, 10)  # a late answer to an old renewal moves nothing back
    assert clock.valid_until == now + 10 - lease_margin_s(10)
    clock.renewed(now + 1, 0)  # etcd said expired: not a renewal
    assert clock.valid_until == now + 10 - lease_margin_s(10)
    clock.lost()
    assert not clock.valid()
    clock.renewed(now - 10 + lease_margin_s(10) - 0.001, 10)  # sent too long ago
    assert not clock.valid()
    assert lease_margin_s(2) == 0.5 and lease_margin_s(10) == 1.0


@pytest.fixture
async def leader(make_broker):
    """Broker 0 leading t-0 in epoch 1 with ISR {0, 1}."""
    view = MemoryClusterView(0)
    broker = make_broker(cluster=view)
    body = {"topics": [{"topic": "t", "partitions": 1, "replication_factor": 1,
                        "configs": {}}], "timeout_ms": 1000}
    assert (await call(broker, ApiKey.CREATE_TOPICS, body))["topics"][0]["error_code"] == 0
    view.set("t", 0, leader=0, epoch=1, isr=(0, 1), replicas=(0, 1))
    broker.replicas.start()
    yield broker, view
    await broker.replicas.stop()


async def produce(broker, acks):
    body = {"acks": acks, "timeout_ms": 5000, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "records": batch([b"a"])}]}]}
    return (await call(broker, ApiKey.PRODUCE, body))["topics"][0]["partitions"][0]


async def follower_fetch(broker, offset):
    body = {"replica_id": 1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": offset, "max_bytes": 1 << 20}]}]}
    return await call(broker, ApiKey.FETCH, body)


async def test_a_leader_in_doubt_refuses_acks_1_and_all_and_writes_nothing(leader):
    broker, view = leader
    view.lease_valid = False
    for acks in (1, -1):
        assert (await produce(broker, acks))["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert broker.replicas.get("t", 0).log.log_end_offset == 0
    view.lease_valid = True  # renewed: acknowledging again
    assert (await produce(broker, 1))["error_code"] == 0


async def test_an_acks_all_produce_that_waited_through_the_doubt_is_not_acknowledged(leader):
    broker, view = leader
    waiting = asyncio.ensure_future(produce(broker, -1))
    await asyncio.sleep(0.05)
    assert not waiting.done()  # the follower has not copied it yet
    view.lease_valid = False
    await follower_fetch(broker, 1)  # the HW passes the batch now
    assert (await waiting)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
