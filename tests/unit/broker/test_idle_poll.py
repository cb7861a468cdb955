"""Idle polling after requests: whether the event loop polls or sleeps, counted, not timed.

A polling loop spins on zero-timeout polls and never blocks, so its thread makes no
voluntary context switch; a loop that sleeps in its poll blocks, and every block is one. The
loop thread's voluntary switches (``getrusage(RUSAGE_THREAD)``) tell the two apart whatever
else the machine runs: a loaded machine takes CPU from a spinning loop (which made an earlier
version of these tests, counting CPU seconds, fail under load) but cannot make it block. The
window here is long (0.2 s) against the 20 ms measured inside it, so a preemption of the
test process does not end the window before the measurement does.
"""

from __future__ import annotations

import asyncio
import resource
import time

import pytest

from tslog.broker.server.idle_poll import IdlePoller

WINDOW_US = 200_000

pytestmark = pytest.mark.skipif(not hasattr(resource, "RUSAGE_THREAD"),
                                reason="needs getrusage(RUSAGE_THREAD) (Linux)")


async def blocks_while_idle(seconds: float = 0.02) -> int:
    """How often the loop thread blocked while it had nothing to do for ``seconds``."""
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    await asyncio.sleep(seconds)
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before


async def test_requests_close_behind_each_other_keep_the_loop_polling_one_window():
    loop = asyncio.get_running_loop()
    poller = IdlePoller(WINDOW_US)
    poller.handled(loop, time.perf_counter())
    poller.handled(loop, time.perf_counter())  # right behind the first: a client's loop
    assert await blocks_while_idle() == 0  # polling: it never slept
    await asyncio.sleep(WINDOW_US / 1e6)  # the window ends
    assert await blocks_while_idle() >= 1  # asleep again


async def test_requests_spaced_wider_than_the_window_let_the_loop_sleep():
    loop = asyncio.get_running_loop()
    poller = IdlePoller(10_000)
    for _ in range(3):
        poller.handled(loop, time.perf_counter())
        await asyncio.sleep(0.011)  # wider than the window
        assert await blocks_while_idle() >= 1


async def test_zero_turns_polling_off():
    loop = asyncio.get_running_loop()
    poller = IdlePoller(0)
    poller.handled(loop, time.perf_counter())
    poller.handled(loop, time.perf_counter())
    assert await blocks_while_idle() >= 1
