"""Waiting for records' outcomes: what ``flush`` and ``close`` of a producer share."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

from .errors import FlushTimeoutError


async def wait_for_outcomes(futures: list[Future], timeout_ms: int | None) -> int:
    """Wait until every future is done or ``timeout_ms`` passes; return how many are not.

    A failure stays the record future's to report: each done waiter's exception is read
    here only so that asyncio does not warn about it when the waiter is collected."""
    if not futures:
        return 0
    waiters = [asyncio.wrap_future(future) for future in futures]
    _, pending = await asyncio.wait(waiters,
                                    timeout=None if timeout_ms is None else timeout_ms / 1000)
    for waiter in waiters:
        if waiter.done() and not waiter.cancelled():
            waiter.exception()
    return len(pending)


def check_flushed(pending: int, timeout_ms: int | None) -> None:
    """Raise FlushTimeoutError if ``pending`` batches still have no outcome after a flush's
    ``timeout_ms`` (kafka-python's ``flush`` raises too): a flush that returns has every
    outcome, never "some of them, perhaps". Nothing is cancelled: what is in flight stays in
    flight, and each record's future reports its outcome."""
    if pending:
        raise FlushTimeoutError(
            f"flush: {pending} record batches not acknowledged within timeout_ms "
            f"{timeout_ms}; they are still being sent (their futures tell the outcome)")
