"""Group commit for durable acks, and the wake-up of long-polling fetches.

Theory of operation of ``GroupCommitter``: a Produce with acks = -1 appends on the event loop,
then asks ``durable(logs)`` for a ``Pending`` (``data/pending.py``). One flusher thread of its
own runs rounds back to back while anyone waits: a round takes every waiting log at once,
fsyncs them, and hands the results to the loop (one ``call_soon_threadsafe`` per round),
which settles the round's waiters there, building their answers in that call; then the
thread at once starts the next round if new waiters came meanwhile. So N concurrent durable
produces cost one round of fsyncs, not N (fsync has a long tail). A waiter that arrives
during a round waits for the next one: its bytes may postdate the fsync already under way.

An idle flusher is woken once per loop iteration, not per waiter (``_wake``, a
``call_soon``): the produces one read of the socket brought are appended first and share
the round, rather than the first of them starting a round of its own and the rest waiting
for the next (more rounds, more fsyncs and thread hand-offs for the same bytes).

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

from ..data.pending import Pending, together
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
    """On the loop: settle one round's waiters (each with its own logs' failures), as one
    (``pending.together``: each connection then writes the round's answers at once)."""
    with together():
        for pending, wanted, _ in waiters:
            if isinstance(failed, BaseException):
                pending.fail(failed)
            else:
                pending.settle({p: failed[p] for p in wanted if p in failed} if failed else {})


class GroupCommitter:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._logs: set[PartitionLog] = set()
        self._waiters: list[tuple[Pending, list[PartitionLog], asyncio.AbstractEventLoop]] = []
        self._thread: threading.Thread | None = None
        self._stopping = False
        # The loop a ``_wake`` is scheduled on: by loop, so a loop closed before running
        # its wake (tests drive one broker from several) never leaves the flusher asleep.
        self._wake_on: asyncio.AbstractEventLoop | None = None
        self.rounds = 0  # flush rounds run (a counter for metrics and tests)

    def durable(self, logs: Iterable[PartitionLog]) -> Pending:
        """A ``Pending`` settled on the event loop once everything appended to ``logs`` so
        far is fsynced, with the logs among them whose flush failed (and the error). Not a
        coroutine or a future: every acks=all produce waits on one, and its answer is built
        in the call that settles it (``pending.py``). A produce that times out just stops
        listening; the round is unharmed."""
        loop = asyncio.get_running_loop()
        logs = list(logs)
        pending = Pending()
        with self._condition:
            if self._stopping:
                pending.fail(ConnectionAbortedError("broker shutting down"))
                return pending
            self._logs.update(logs)
            self._waiters.append((pending, logs, loop))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tslog-fsync",
                                                daemon=True)
                self._thread.start()
            elif self._wake_on is not loop:
                self._wake_on = loop
                loop.call_soon(self._wake)
        return pending

    def _wake(self) -> None:
        """On the loop, once per iteration that added waiters: wake an idle flusher."""
        with self._condition:
            self._wake_on = None
            self._condition.notify()

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
            loops = {loop for _, _, loop in waiters}
            for loop in loops:
                mine = waiters if len(loops) == 1 else [
                    waiter for waiter in waiters if waiter[2] is loop]
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
