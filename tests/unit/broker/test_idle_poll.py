"""Idle polling after requests: what it costs, measured as the CPU the event loop burns.

A polling loop spins on zero-timeout polls, so while it polls the process uses CPU even
though nothing arrives; a loop that sleeps in its poll uses none. The windows here are
10 ms so the difference stands far above scheduling noise.
"""

from __future__ import annotations

import asyncio
import time

from tslog.broker.server.idle_poll import IdlePoller

WINDOW_US = 10_000


async def cpu_while_idle(seconds: float = 0.04) -> float:
    """CPU seconds this process uses while its loop has nothing to do for ``seconds``."""
    used = time.process_time()
    await asyncio.sleep(seconds)
    return time.process_time() - used


async def test_requests_close_behind_each_other_keep_the_loop_polling_one_window():
    loop = asyncio.get_running_loop()
    poller = IdlePoller(WINDOW_US)
    poller.handled(loop, time.perf_counter())
    poller.handled(loop, time.perf_counter())  # right behind the first: a client's loop
    assert await cpu_while_idle() >= 0.6 * WINDOW_US / 1e6
    assert await cpu_while_idle() < 0.3 * WINDOW_US / 1e6  # the window ended: asleep


async def test_requests_spaced_wider_than_the_window_let_the_loop_sleep():
    loop = asyncio.get_running_loop()
    poller = IdlePoller(WINDOW_US)
    for _ in range(3):
        poller.handled(loop, time.perf_counter())
        assert await cpu_while_idle(0.02) < 0.3 * WINDOW_US / 1e6


async def test_zero_turns_polling_off():
    loop = asyncio.get_running_loop()
    poller = IdlePoller(0)
    poller.handled(loop, time.perf_counter())
    poller.handled(loop, time.perf_counter())
    assert await cpu_while_idle() < 0.3 * WINDOW_US / 1e6
