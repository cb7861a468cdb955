"""Group commit for durable acks, and the wake-up of long-polling fetches.

Theory of operation of ``GroupCommitter``: a Produce with acks = -1 appends on the event loop,
then asks ``durable(logs)`` for a future. One flusher thread of its own runs rounds back to
back while anyone waits: a round takes every waiting log at once, fsyncs them, and hands the
results to the loop (one ``call_soon_threadsafe`` per round), then at once starts the next
round if new waiters came meanwhile. So N concurrent durable produces cost one round of fsyncs,
not N (fsync has a long tail). A waiter that arrives during a round
waits for the next one: its bytes may postdate the fsync already under way.

Why a thread that loops rather than one ``run_in_executor`` per round: measured under acks=all
load, waking an executor thread and getting its result back onto a busy loop took as long
as the fsync itself, and each round waited for both
before the next could start. Here the next round starts without the loop's help, so rounds
come as fast as the disk allows.

``AppendNotifier``: a long-polling Fetch registers one future under every log it reads; an
append resolves the futures of its log. With no waiters an append costs one dict lookup.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Iterable

from ..storage import PartitionLog

log = logging.getLogger("tslog.broker.durability")


def _flush_all(logs: set[PartitionLog]) -> dict[PartitionLog, Exception]:
    """fsync every log; return the ones that failed with their error (runs in the thread)."""
    failed = {}
    for plog in logs:
        try:
            plog.flush()
        except Exception as exc:  # noqa: BLE001 - reported per waiter, logged here once
            failed[plog] = exc
            log.error("flush of %s failed: %r", plog.directory.name, exc)
    return failed


def _resolve(waiters: list, failed: dict | BaseException) -> None:
    """On the loop: answer one round's waiters (a timed-out produce's future is done)."""
    for future, wanted in waiters:
        if future.done():
            continue
        if isinstance(failed, BaseException):
            future.set_exception(failed)
        else:
            future.set_result({p: failed[p] for p in wanted if p in failed})


class GroupCommitter:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._logs: set[PartitionLog] = set()
        self._waiters: list[tuple[asyncio.Future, list[PartitionLog]]] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.rounds = 0  # flush rounds run (a counter for metrics and tests)

    def durable(self, logs: Iterable[PartitionLog]) -> asyncio.Future:
        """A future resolved once everything appended to ``logs`` so far is fsynced, with
        the logs among them whose flush failed (and the error). A plain future rather than a
        coroutine: every acks=all produce waits on one, and a task each would cost more than
        the wait itself. Cancelling it (a timed-out produce) leaves the round unharmed."""
        loop = asyncio.get_running_loop()
        logs = list(logs)
        future = loop.create_future()
        with self._condition:
            if self._stopping:
                future.set_exception(ConnectionAbortedError("broker shutting down"))
                return future
            self._logs.update(logs)
            self._waiters.append((future, logs))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tslog-fsync",
                                                daemon=True)
                self._thread.start()
            else:
                self._condition.notify()
        return future

    def _run(self) -> None:
        """The flusher thread: rounds while there are waiters, asleep otherwise."""
        condition = self._condition
        while True:
            with condition:
                while not self._waiters and not self._stopping:
                    condition.wait()
                if not self._waiters:
                    return  # stopping, and nobody waits
                logs, self._logs = self._logs, set()
                waiters, self._waiters = self._waiters, []
            try:
                failed: dict | BaseException = _flush_all(logs)
            except BaseException as exc:  # noqa: BLE001 - every waiter hears of it
                log.exception("group commit round failed")
                failed = exc if isinstance(exc, Exception) else ConnectionAbortedError(
                    "group commit stopped")
            self.rounds += 1
            # One loop in the broker; a Broker driven from several loops (tests) gets each its own.
            loops = {future.get_loop() for future, _ in waiters}
            for loop in loops:
                mine = waiters if len(loops) == 1 else [
                    waiter for waiter in waiters if waiter[0].get_loop() is loop]
                try:
                    loop.call_soon_threadsafe(_resolve, mine, failed)
                except RuntimeError:  # that loop is closed: nobody is left to answer
                    pass

    def shutdown(self) -> None:
        """Finish the rounds owed (their waiters are answered if the loop still runs), then
        stop the thread; later ``durable`` calls fail at once."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
        if self._thread is not None:
            self._thread.join()


class AppendNotifier:
    def __init__(self) -> None:
        self._waiters: dict[PartitionLog, list[asyncio.Future]] = {}

    def notify(self, plog: PartitionLog) -> None:
        """Wake every fetch waiting on ``plog`` (called after each append)."""
        futures = self._waiters.pop(plog, None)
        if futures:
            for future in futures:
                if not future.done():
                    future.set_result(None)

    def register(self, logs: Iterable[PartitionLog], future: asyncio.Future) -> None:
        for plog in logs:
            self._waiters.setdefault(plog, []).append(future)

    def unregister(self, logs: Iterable[PartitionLog], future: asyncio.Future) -> None:
        for plog in logs:
            futures = self._waiters.get(plog)
            if futures is None:
                continue
            try:
                futures.remove(future)
            except ValueError:
                pass
            if not futures:
                del self._waiters[plog]

    def notify_all(self) -> None:
        """Wake every waiting fetch (shutdown): they answer with what they have."""
        for plog in list(self._waiters):
            self.notify(plog)
