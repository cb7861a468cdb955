"""``Pending``: a result still to come, whose callbacks run in the call that settles it.

Why not an ``asyncio.Future``: a future runs each callback a loop iteration after it is
resolved, and a task awaiting it takes one more. A durable produce (acks = -1) went through
three such hops between the fsync that made it safe and its answer: the group commit's
future, the task running the handler, the task's done callback. Each hop waited behind every
request the loop had read meanwhile, and each produce paid for a task, a coroutine per layer
and a timeout context. With ``Pending`` the same steps are plain calls: the round that synced
the batch settles it, the ``then`` steps build the answer, and the connection's callback
hands the answer to the wire, all in one call on the event loop.

Single-threaded: settle it and add callbacks on the event loop only (the group commit's
thread hands its rounds to the loop first). The first outcome stands: a later ``settle`` or
``fail`` (a round finishing after the produce timed out) does nothing.

``await`` works too, for code on a coroutine path (a produce that also waits for followers,
tests): it bridges to a future of the running loop.

``together()`` and ``afterwards``: a group commit round settles many ``Pending`` at once, and
a connection wants to send all the answers it got from one round in one write. It used to
ask for that write on the loop's next turn (``call_soon``), and the answers then waited
behind every request the loop read meanwhile. Inside ``together()`` such work is put off
only to the end of the block: every answer of the round is in place, and out they go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any, Callable

log = logging.getLogger("tslog.broker.pending")

# Per thread (tests run loops in several): the work ``afterwards`` put off to the end of
# the ``together()`` block under way, or None outside one.
_deferred = threading.local()

_WAITING, _SETTLED, _FAILED = 0, 1, 2


class Pending:
    __slots__ = ("_callbacks", "_state", "_outcome")

    def __init__(self) -> None:
        self._callbacks: list[Callable[[Pending], Any]] = []
        self._state = _WAITING
        self._outcome: Any = None

    @property
    def done(self) -> bool:
        return self._state != _WAITING

    def settle(self, value: Any) -> None:
        """Settle with ``value`` and run the callbacks now (ignored once settled)."""
        if self._state == _WAITING:
            self._state, self._outcome = _SETTLED, value
            self._run_callbacks()

    def fail(self, error: BaseException) -> None:
        """Settle with ``error``, which ``result`` raises (ignored once settled)."""
        if self._state == _WAITING:
            self._state, self._outcome = _FAILED, error
            self._run_callbacks()

    def result(self) -> Any:
        """The value, or raise the error, of a settled ``Pending``."""
        if self._state == _SETTLED:
            return self._outcome
        if self._state == _FAILED:
            raise self._outcome
        raise asyncio.InvalidStateError("not settled yet")

    def add_callback(self, callback: Callable[[Pending], Any]) -> None:
        """``callback(self)`` once settled: now if it is."""
        if self._state == _WAITING:
            self._callbacks.append(callback)
        else:
            callback(self)

    def then(self, transform: Callable[[Any], Any]) -> Pending:
        """A ``Pending`` of ``transform(value)``; an error (raised here or by ``transform``)
        passes on as the new one's error."""
        following = Pending()

        def step(source: Pending) -> None:
            try:
                value = transform(source.result())
            except Exception as exc:  # noqa: BLE001 - the follower carries it to its callbacks
                following.fail(exc)
            else:
                following.settle(value)
        self.add_callback(step)
        return following

    def _run_callbacks(self) -> None:
        """Each callback once; one that raises is logged and the others still run (they
        are different requests' answers: one bug must not leave the rest unanswered)."""
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # noqa: BLE001 - logged; the round goes on
                log.exception("a callback of a settled result failed")

    def __await__(self):
        if self._state == _WAITING:
            future = asyncio.get_running_loop().create_future()
            self.add_callback(lambda source: _forward(source, future))
            yield from future.__await__()
        return self.result()


def _forward(source: Pending, future: asyncio.Future) -> None:
    if future.done():  # the awaiting task was cancelled
        return
    try:
        future.set_result(source.result())
    except Exception as exc:  # noqa: BLE001 - handed on to the awaiting task
        future.set_exception(exc)


@contextlib.contextmanager
def together():
    """Settle several ``Pending`` as one: what their callbacks hand to ``afterwards`` runs
    once, in order, when the block ends (a nested block joins the outer one)."""
    if getattr(_deferred, "work", None) is not None:
        yield
        return
    _deferred.work = work = []
    try:
        yield
    finally:
        _deferred.work = None  # what the deferred work asks for now goes to the next turn
        for call in work:
            try:
                call()
            except Exception:  # noqa: BLE001 - logged; the others still run
                log.exception("work put off to the end of a settled round failed")


def afterwards(call: Callable[[], Any], loop: asyncio.AbstractEventLoop) -> None:
    """``call()`` at the end of the ``together()`` block under way, else on ``loop``'s next
    turn."""
    work = getattr(_deferred, "work", None)
    if work is None:
        loop.call_soon(call)
    else:
        work.append(call)
