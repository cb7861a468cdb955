"""The sync facades' hand-off to their loop thread: results, errors, timeouts.

Goal: every blocking call (``Consumer.offsets_for_times``, ``poll``, admin calls) goes through
``_LoopThread.run``; a user must get the coroutine's result or its exception, and a call that
times out must raise ``TimeoutError`` and stop the work it started (not leave it running).
Method: a real loop thread and small coroutines.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from tslog.client.sync import _LoopThread


@pytest.fixture
def loop_thread():
    thread = _LoopThread("test-loop")
    yield thread
    thread.stop()


def test_results_and_exceptions_come_back_to_the_caller(loop_thread):
    async def answer(value):
        await asyncio.sleep(0)
        return value, threading.current_thread().name

    async def fail():
        raise KeyError("missing")

    assert loop_thread.run(answer(7)) == (7, "test-loop")
    with pytest.raises(KeyError):
        loop_thread.run(fail())
    assert loop_thread.run(answer(8), timeout=5)[0] == 8


def test_a_timed_out_call_is_cancelled_on_the_loop(loop_thread):
    cancelled = threading.Event()

    async def forever():
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        loop_thread.run(forever(), timeout=0.05)
    assert cancelled.wait(5)


def test_the_loop_thread_cannot_wait_on_itself(loop_thread):
    async def nested():
        inner = asyncio.sleep(0)
        try:
            loop_thread.run(inner)
        except RuntimeError as exc:
            return str(exc)

    assert "own loop thread" in loop_thread.run(nested())
