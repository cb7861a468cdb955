"""What a send returns: ``RecordFuture`` (one record) and ``BatchFuture`` (a ``send_batch``).

Why their own module: they read a batch's one ``concurrent.futures.Future`` and build
``RecordMetadata`` only when asked (``_accumulator.py`` says why one future per batch); the
accumulator that queues the batches is a separate job.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time

from ._types import RecordMetadata

def _chained(outcome) -> concurrent.futures.Future:
    """A concurrent future settled with ``outcome.get()`` once ``outcome`` is done."""
    chained: concurrent.futures.Future = concurrent.futures.Future()

    def settle(_) -> None:
        error = outcome.exception(0)
        if error is not None:
            chained.set_exception(error)
        else:
            chained.set_result(outcome.get(0))

    outcome.add_done_callback(settle)
    return chained


class RecordFuture:
    """The outcome of one ``send``: await it (asyncio) or ``get()`` it (threads)."""

    __slots__ = ("_batch", "_index")

    def __init__(self, batch, index: int) -> None:
        self._batch = batch
        self._index = index

    def __await__(self):
        future = self._batch.future
        if not future.done():
            yield from asyncio.wrap_future(future).__await__()
        return self._batch.metadata(self._index)

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Block until the record is acknowledged; raise its error if it failed."""
        self._batch.future.result(timeout)
        return self._batch.metadata(self._index)

    result = get  # concurrent.futures' name

    def as_concurrent_future(self) -> concurrent.futures.Future:
        """A ``concurrent.futures.Future`` of the same outcome, for ``concurrent.futures.wait``
        and ``as_completed``. Made on request only: one per ``send`` would cost every record
        a lock and a condition variable."""
        return _chained(self)

    def done(self) -> bool:
        return self._batch.future.done()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._batch.future.exception(timeout)

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` when done (possibly on the client's loop thread)."""
        self._batch.future.add_done_callback(lambda _: callback(self))

    def batches(self) -> list:
        """What this outcome waits for: the batch (or a deferred stand-in) in a list."""
        return [self._batch]


class BatchFuture:
    """The outcome of one ``send_batch``: a list of ``RecordMetadata`` in the input's order.

    ``parts`` is [(source, positions)]: ``source`` is a ProducerBatch (or a deferred stand-in)
    with ``future`` and ``metadata(index)``; its record ``i`` is input record
    ``positions[i]``. Metadata objects are made only when the result is asked for.
    """

    __slots__ = ("_parts", "_count")

    def __init__(self, parts: list, count: int) -> None:
        self._parts = parts
        self._count = count

    def _futures(self) -> list:
        return [source.future for source, _ in self._parts]

    def batches(self) -> list:
        """What this outcome waits for: its batches (or deferred stand-ins)."""
        return [source for source, _ in self._parts]

    def _result(self) -> list[RecordMetadata]:
        out: list = [None] * self._count
        for source, positions in self._parts:
            metadata = source.metadata
            for index, position in enumerate(positions):
                out[position] = metadata(index)
        return out

    def __await__(self):
        for future in self._futures():
            if not future.done():
                yield from asyncio.wrap_future(future).__await__()
        return self._result()

    def as_concurrent_future(self) -> concurrent.futures.Future:
        """A ``concurrent.futures.Future`` of the same outcome (see RecordFuture's)."""
        return _chained(self)

    def get(self, timeout: float | None = None) -> list[RecordMetadata]:
        """Block until every record is acknowledged; raise the first error if one failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for future in self._futures():
            future.result(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return self._result()

    def last(self, timeout: float | None = None) -> RecordMetadata | None:
        """Block as ``get`` does, but build only the last record's metadata (None when the
        call had no records): a caller that needs one offset or LogAppendTime per batch
        (the mirror's target LAT) pays nothing per record."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for future in self._futures():
            future.result(None if deadline is None else max(0.0, deadline - time.monotonic()))
        for source, positions in self._parts:
            if len(positions) and positions[-1] == self._count - 1:
                return source.metadata(len(positions) - 1)
        return None

    def done(self) -> bool:
        return all(future.done() for future in self._futures())

    result = get  # concurrent.futures' name

    def exception(self, timeout: float | None = None) -> BaseException | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for future in self._futures():
            error = future.exception(
                None if deadline is None else max(0.0, deadline - time.monotonic()))
            if error is not None:
                return error
        return None

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` once every part is done (possibly on the loop thread)."""
        futures = self._futures()
        remaining = [len(futures)]
        lock = threading.Lock()

        def one_done(_) -> None:
            with lock:
                remaining[0] -= 1
                last = remaining[0] == 0
            if last:
                callback(self)

        if not futures:
            callback(self)
        for future in futures:
            future.add_done_callback(one_done)
