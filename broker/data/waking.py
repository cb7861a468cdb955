"""Requests that name dormant logs: the logs are opened in a worker thread, not on the loop.

Why: a single broker restarted after a clean stop leaves each log unopened (dormant) until
its first use, and opening one reads its files and maps its indexes. The first ListOffsets
over ten thousand of them, or the first Produce a producer sends after the restart, did
that on the event loop for seconds, and every connection waited. Here the request waits
instead, while the loop serves everyone else.

What must not change is the order writes land in. A connection's Produce requests append
in the order they were sent (an idempotent producer's sequence numbers depend on it), so a
Produce that waits (``DormantWaits``) holds every partition it names (the replica manager's
claims) until it has appended: a later Produce naming one of them waits too, and deferred
Produces append one after another in arrival order, whichever's logs opened first. A read
(Fetch, ListOffsets) changes nothing; it waits for the logs it names and for the Produces
deferred before it, so a connection still reads its own earlier writes.

The first write to a woken log makes its marker's removal durable first (``storage/log.py``);
for a Produce the opening thread does that beside the opening (one ``syncfs`` for many), for
a read's logs after the answer (``sync_marker_removals``), so neither leaves an fsync a
partition to the loop.
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..replication.manager import ReplicaManager
from ..storage.log import sync_marker_removals


def _woken_logs(woken: list) -> list:
    return [plog for _, plog, _ in woken]


def _wake_for_writes(replicas: ReplicaManager, dormant: list) -> list:
    """Open the logs and make their markers' removals durable, so the appends that follow
    on the loop sync nothing."""
    woken = replicas.wake(dormant)
    sync_marker_removals(_woken_logs(woken))
    return woken


async def _settled(result):
    return (await result) if inspect.isawaitable(result) else result


class DormantWaits:
    """The broker's requests waiting for dormant logs: one thread opens them, one request's
    logs after another (opening is Python and small reads: threads side by side only
    contend for Python's lock, and took longer), and the Produces among them append in
    arrival order, each after the one before it (``tail``)."""

    def __init__(self) -> None:
        self.tail: asyncio.Future | None = None
        self._unanswered: set[asyncio.Task] = set()  # acks = 0: nobody awaits them
        self._opener = ThreadPoolExecutor(1, thread_name_prefix="tslog-open-dormant")

    async def _opened(self, replicas: ReplicaManager, dormant: list, for_writes: bool
                      ) -> list:
        """Open ``dormant`` (``(key, log)`` pairs, their partitions claimed by the caller) in
        the opening thread, and give them their partition state on the loop; the woken
        ones."""
        woken = []
        try:
            loop = asyncio.get_running_loop()
            if for_writes:
                woken = await loop.run_in_executor(self._opener, _wake_for_writes, replicas,
                                                   dormant)
            else:
                woken = await loop.run_in_executor(self._opener, replicas.wake, dormant)
        finally:
            replicas.adopt(woken)
        return woken

    # -- produce ---------------------------------------------------------------------------

    def defer_produce(self, replicas: ReplicaManager, keys: list, dormant: list,
                      append: Callable[[], object], answered: bool):
        """Run ``append()`` (the Produce itself) once the ``dormant`` logs are open and every
        Produce deferred before it has appended; ``keys`` are the partitions it names, held
        until then. Returns the task whose result is its results, or None when nobody will
        await it (acks = 0).

        A task of its own, ended by a callback as well as by itself: a coroutine cancelled
        before its first step runs none of its code, and a turn it left open would hold up
        every Produce after it."""
        loop = asyncio.get_running_loop()
        before, turn = self.tail, loop.create_future()
        self.tail = turn
        replicas.claim(keys)
        task = loop.create_task(self._in_turn(replicas, keys, dormant, before, turn, append))
        task.add_done_callback(lambda _: self._end(replicas, keys, turn))
        if answered:
            return task
        self._unanswered.add(task)
        task.add_done_callback(self._unanswered.discard)
        return None

    def _end(self, replicas: ReplicaManager, keys: list, turn: asyncio.Future) -> None:
        """Release the Produce's partitions and let the next one append (once)."""
        if turn.done():
            return
        replicas.release(keys)
        turn.set_result(None)
        if self.tail is turn:
            self.tail = None

    async def _in_turn(self, replicas: ReplicaManager, keys: list, dormant: list,
                       before: asyncio.Future | None, turn: asyncio.Future,
                       append: Callable[[], object]):
        try:
            if dormant:
                await self._opened(replicas, dormant, for_writes=True)
            if before is not None:
                await asyncio.shield(before)  # a cancelled Produce does not cut the line
            result = append()
        finally:
            self._end(replicas, keys, turn)
        return await _settled(result)

    # -- reads -----------------------------------------------------------------------------

    async def read_after(self, replicas: ReplicaManager, dormant: list,
                         answer: Callable[[], object]):
        """``answer()`` (awaited if it is an awaitable) once the ``dormant`` logs a read
        names are open and the Produces deferred before it have appended. The logs' marker
        removals are then made durable in the opening thread, after the answer is sent."""
        before = self.tail
        if dormant:
            keys = [key for key, _ in dormant]
            replicas.claim(keys)  # held while they open (a Produce naming one waits)
            try:
                woken = await self._opened(replicas, dormant, for_writes=False)
            finally:
                replicas.release(keys)
            if woken:  # not waited for: the read's answer does not depend on it
                self._opener.submit(sync_marker_removals, _woken_logs(woken))
        if before is not None:
            await asyncio.shield(before)
        return await _settled(answer())
