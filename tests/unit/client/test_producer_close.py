"""The producer once ``close()`` has begun: every send path refuses with ``ClientClosedError``.

Goal: ``send_batch`` raised NameError here (its module used ``ClientClosedError`` without
importing it); the tidy test's undefined-name check now keeps that kind out, and this pins
the behaviour. Method: an ``AsyncProducer`` whose bootstrap address has no listener, so a
record for an unknown topic waits (deferred) and ``close()`` stays in its flush while the
test calls ``send`` and ``send_batch``.
"""

from __future__ import annotations

import asyncio

import pytest

from tslog.client.aio import AsyncProducer
from tslog.client.errors import ClientClosedError, TslogError
from tests.helpers.broker_process import free_port


async def test_send_and_send_batch_refuse_once_close_has_begun():
    producer = AsyncProducer(f"127.0.0.1:{free_port()}", max_block_ms=300,
                             delivery_timeout_ms=300, retry_backoff_ms=20)
    waiting = producer.send("nowhere", b"queued before close")  # deferred: no metadata
    closing = asyncio.ensure_future(producer.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # still flushing the deferred record
    with pytest.raises(ClientClosedError):
        producer.send_batch("nowhere", [b"a", b"b"])
    with pytest.raises(ClientClosedError):
        producer.send("nowhere", b"c")
    await asyncio.wait_for(closing, 10)
    with pytest.raises(TslogError):  # it failed (timed out or closed); it did not hang
        await asyncio.wait_for(waiting, 1)
    with pytest.raises(ClientClosedError):
        producer.send_batch("nowhere", [b"d"])


async def test_send_batch_on_a_producer_closed_before_it_started():
    producer = AsyncProducer(f"127.0.0.1:{free_port()}")
    await producer.close()
    with pytest.raises(ClientClosedError):
        producer.send_batch("t", [b"x"])
