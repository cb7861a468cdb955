"""Group commit for durable acks, and the wake-up of long-polling fetches.

Theory of operation of ``GroupCommitter``: a Produce with acks = -1 appends on the event loop,
then awaits ``durable(logs)``. Waiters pile up while one flush round runs in a dedicated
thread; when it returns, the next round takes every log with waiting acks at once and fsyncs
them in one thread call, then resolves all of that round's waiters. So N concurrent durable
produces cost one round of fsyncs, not N (fsync is ~0.25 ms median here, its p99 in ms).
A waiter that arrives during a round waits for the next one: its bytes may postdate the
fsync already under way. The thread is a dedicated single worker so fsyncs never queue behind
other ``to_thread`` work.

``AppendNotifier``: a long-polling Fetch registers one future under every log it reads; an
append resolves the futures of its log. With no waiters an append costs one dict lookup.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
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


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("group commit task failed", exc_info=task.exception())


class GroupCommitter:
    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tslog-fsync")
        self._logs: set[PartitionLog] = set()
        self._waiters: list[tuple[asyncio.Future, list[PartitionLog]]] = []
        self._task: asyncio.Task | None = None
        self.rounds = 0  # flush rounds run (a counter for metrics and tests)

    def durable(self, logs: Iterable[PartitionLog]) -> asyncio.Future:
        """A future resolved once everything appended to ``logs`` so far is fsynced, with
        the logs among them whose flush failed (and the error). A plain future rather than a
        coroutine: every acks=all produce waits on one, and a task each would cost more than
        the wait itself. Cancelling it (a timed-out produce) leaves the round unharmed."""
        loop = asyncio.get_running_loop()
        logs = list(logs)
        future = loop.create_future()
        self._logs.update(logs)
        self._waiters.append((future, logs))
        if self._task is None:
            self._task = loop.create_task(self._run(), name="tslog-group-commit")
            self._task.add_done_callback(_log_failure)
        return future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        waiters: list = []
        try:
            while self._waiters:
                logs, self._logs = self._logs, set()
                waiters, self._waiters = self._waiters, []
                failed = await loop.run_in_executor(self._executor, _flush_all, logs)
                self.rounds += 1
                for future, wanted in waiters:
                    if not future.done():
                        future.set_result({p: failed[p] for p in wanted if p in failed})
                waiters = []
        except BaseException as exc:
            for future, _ in waiters + self._waiters:
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else
                                         ConnectionAbortedError("broker shutting down"))
            self._waiters = []
            raise
        finally:
            self._task = None

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


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
