"""The group commit behind acks=all: what a durable produce waits for, and what it hears."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.helpers.storage import make_batch, open_log
from tslog.broker.server.durability import GroupCommitter


@pytest.fixture
def committer():
    committer = GroupCommitter()
    yield committer
    committer.shutdown()


@pytest.fixture
def logs(tmp_path):
    opened = [open_log(tmp_path / f"t-{n}") for n in range(2)]
    yield opened
    for log in opened:
        log.close()


async def test_an_ack_waits_for_the_fsync_of_what_was_appended_before_it(committer, logs):
    log = logs[0]
    log.append(make_batch(3))
    assert await committer.durable([log]) == {}
    assert log.recovery_point == 3


async def test_a_waiter_arriving_during_a_round_waits_for_the_next_one(committer, logs,
                                                                      monkeypatch):
    """Its bytes may postdate the fsync under way, so that round cannot answer it."""
    log = logs[0]
    entered, release = threading.Event(), threading.Event()
    real_flush = log.flush

    def slow_flush():
        entered.set()
        release.wait(10)
        return real_flush()

    monkeypatch.setattr(log, "flush", slow_flush)
    log.append(make_batch(1))
    first = committer.durable([log])
    assert await asyncio.to_thread(entered.wait, 10)
    log.append(make_batch(1))
    second = committer.durable([log])
    release.set()
    await first
    await second
    assert committer.rounds == 2  # had the first round answered both, the second batch
    assert log.recovery_point == 2  # would be acknowledged without ever being synced


async def test_a_failed_flush_reaches_only_the_waiters_of_that_log(committer, logs,
                                                                  monkeypatch):
    broken, healthy = logs
    monkeypatch.setattr(broken, "flush", lambda: (_ for _ in ()).throw(OSError(5, "EIO")))
    for log in logs:
        log.append(make_batch(1))
    both, only_healthy = committer.durable(logs), committer.durable([healthy])
    failed = await both
    assert list(failed) == [broken] and isinstance(failed[broken], OSError)
    assert await only_healthy == {}
    assert healthy.recovery_point == 1


async def test_a_waiter_nobody_listens_to_any_more_does_not_disturb_the_round(committer, logs):
    """A produce that timed out stops listening to its round; the round still runs, and
    settles it (unheard) with everyone else's."""
    log = logs[0]
    log.append(make_batch(1))
    abandoned = committer.durable([log])
    assert await committer.durable([log]) == {}
    assert abandoned.done and abandoned.result() == {}
    assert log.recovery_point == 1


async def test_shutdown_answers_the_rounds_owed_then_refuses_new_waiters(committer, logs):
    log = logs[0]
    log.append(make_batch(2))
    owed = committer.durable([log])
    await asyncio.to_thread(committer.shutdown)
    assert await owed == {}
    assert log.recovery_point == 2
    with pytest.raises(ConnectionAbortedError):
        await committer.durable([log])
