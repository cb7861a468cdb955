"""The I/O worker: one thread per data directory for the disk work the event loop must not
wait for.

Why: the loop owns every ``PartitionLog`` and decides what happens to it, but some of what
it decides waits on the disk: sealing a rolled segment (three index trims and fsyncs,
orders of magnitude dearer than an append), the fsyncs of a flush policy, rewriting a leader-epoch
checkpoint (an atomic replace with two fsyncs; a failover touching hundreds of partitions
would stall every client and follower for that long), creating the files of the next
segment. The loop changes its in-memory state at once and hands the disk half here as a
command: a small immutable object (or a bound method of the log that owns the state) that
the thread runs later, one at a time, in the order they came. So a command can rely on
every earlier one having run, and ``barrier`` tells the loop when all of them have.

``submit`` returns a ``concurrent.futures.Future``: the server side may await it (through
``asyncio.wrap_future``); storage never imports asyncio. Which work may wait, and what a
crash in between leaves, is the owner's call (``log.py``, ``segment_roll.py``, ``epochs.py``).

``INLINE`` runs every command at once on the caller's thread: what a log opened by a tool or
a test without a worker gets, so it behaves exactly as if the disk work were synchronous.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from typing import Callable

log = logging.getLogger("tslog.broker.storage")


class IOWorker:
    """A thread running submitted commands in order. ``asynchronous`` tells owners whether
    work handed here runs later (then they may prepare ahead, e.g. the next segment's files)."""

    asynchronous = True

    def __init__(self, name: str) -> None:
        self.name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None  # started by the first submission
        self._closed = False

    def submit(self, command: Callable[[], object]) -> Future:
        """Run ``command`` in the thread; the future holds its result or its exception,
        which is also logged. Once the worker is closed (shutdown), in a thread of its own:
        not here, because the caller may hold the lock the command takes (a roll, under its
        log's lock, hands over the seal)."""
        future: Future = Future()
        with self._lock:
            if not self._closed:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=self.name,
                                                    daemon=True)
                    self._thread.start()
                self._queue.put((command, future))
                return future
        threading.Thread(target=_call, args=(command, future), name=self.name,
                         daemon=True).start()
        return future

    def barrier(self) -> Future:
        """A future done once every command submitted before it has run."""
        return self.submit(_nothing)

    def close(self) -> None:
        """Run everything submitted so far, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            _call(*item)


class _Inline:
    """Runs each command at once (no thread): synchronous disk work, as before workers."""

    asynchronous = False

    def submit(self, command: Callable[[], object]) -> Future:
        future: Future = Future()
        _call(command, future)
        return future

    def barrier(self) -> Future:
        return self.submit(_nothing)

    def close(self) -> None:
        pass


INLINE = _Inline()


def _nothing() -> None:
    return None


def _call(command: Callable[[], object], future: Future) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = command()
    except BaseException as exc:  # the owner keeps what failed and writes it again later
        if isinstance(exc, Exception):
            log.exception("background disk work failed: %r", command)
        future.set_exception(exc)
    else:
        future.set_result(result)


