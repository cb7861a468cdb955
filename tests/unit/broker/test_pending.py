"""``Pending``: the result an acks=all produce's answer is built from, settled in place."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tslog.broker.data.pending import Pending, afterwards, together


def test_callbacks_run_in_the_call_that_settles_in_the_order_added():
    pending, heard = Pending(), []
    pending.add_callback(lambda p: heard.append(("first", p.result())))
    pending.add_callback(lambda p: heard.append(("second", p.result())))
    assert heard == [] and not pending.done
    pending.settle(7)
    assert heard == [("first", 7), ("second", 7)]


def test_a_callback_added_after_settling_runs_at_once():
    pending, heard = Pending(), []
    pending.settle("x")
    pending.add_callback(lambda p: heard.append(p.result()))
    assert heard == ["x"]


def test_the_first_outcome_stands():
    """A round finishing after the produce timed out must not change its answer."""
    pending, heard = Pending(), []
    pending.add_callback(lambda p: heard.append(p.result()))
    pending.settle("timed out")
    pending.settle("synced")
    pending.fail(OSError("late"))
    assert pending.result() == "timed out" and heard == ["timed out"]


def test_then_transforms_and_carries_errors_down_the_chain():
    source = Pending()
    doubled = source.then(lambda value: value * 2)
    broken = doubled.then(lambda value: 1 / 0)
    after_broken = broken.then(lambda value: "never")
    source.settle(21)
    assert doubled.result() == 42
    with pytest.raises(ZeroDivisionError):
        broken.result()
    with pytest.raises(ZeroDivisionError):
        after_broken.result()

    failed = Pending()
    following = failed.then(lambda value: "never")
    failed.fail(ConnectionAbortedError("shutting down"))
    with pytest.raises(ConnectionAbortedError):
        following.result()


def test_a_raising_callback_is_logged_and_the_others_still_run(caplog):
    """They are different requests' answers: one bug must not leave the rest unanswered."""
    pending, heard = Pending(), []
    pending.add_callback(lambda p: heard.append(1))
    pending.add_callback(lambda p: 1 / 0)
    pending.add_callback(lambda p: heard.append(3))
    with caplog.at_level(logging.ERROR, logger="tslog.broker.pending"):
        pending.settle(None)
    assert heard == [1, 3]
    assert "ZeroDivisionError" in caplog.text


def test_result_before_settling_is_an_error():
    with pytest.raises(asyncio.InvalidStateError):
        Pending().result()


async def test_awaiting_gives_the_value_or_raises_the_error():
    later = Pending()
    asyncio.get_running_loop().call_later(0.01, later.settle, "value")
    assert await later == "value"
    settled = Pending()
    settled.settle(5)
    assert await settled == 5
    failing = Pending()
    asyncio.get_running_loop().call_later(0.01, failing.fail, OSError(5, "EIO"))
    with pytest.raises(OSError):
        await failing


async def test_a_cancelled_awaiter_leaves_the_pending_settleable():
    pending = Pending()
    waiter = asyncio.ensure_future(asyncio.wait_for(pending, 0.01))
    with pytest.raises(TimeoutError):
        await waiter
    pending.settle("late")  # the bridge's future is cancelled: nothing raises
    assert pending.result() == "late"


async def test_work_put_off_inside_together_runs_once_the_block_ends_in_order():
    """What settled callbacks hand to ``afterwards`` waits for the whole round (a
    connection then writes all its answers at once), and runs before the loop turns."""
    loop = asyncio.get_running_loop()
    ran, first, second = [], Pending(), Pending()
    first.add_callback(lambda _: afterwards(lambda: ran.append(("first", second.done)), loop))
    second.add_callback(lambda _: afterwards(lambda: ran.append(("second", True)), loop))
    with together():
        first.settle(1)
        with together():  # a nested block joins the outer one
            second.settle(2)
        assert ran == []
    assert ran == [("first", True), ("second", True)]


async def test_work_put_off_outside_together_runs_on_the_loops_next_turn():
    ran = []
    afterwards(lambda: ran.append(1), asyncio.get_running_loop())
    assert ran == []
    await asyncio.sleep(0)
    assert ran == [1]


async def test_work_put_off_that_raises_is_logged_and_the_rest_still_runs(caplog):
    loop = asyncio.get_running_loop()
    ran = []

    def broken():
        raise RuntimeError("a bug in one connection")

    with together():
        afterwards(broken, loop)
        afterwards(lambda: ran.append("next"), loop)
    assert ran == ["next"]
    assert "a bug in one connection" in caplog.text
