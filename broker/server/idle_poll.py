"""Keep the event loop polling for a moment after a request, while requests come close together.

Why: a vCPU with nothing to run halts, and on a virtual machine waking it for the next
request costs more than serving the request: the broker's own work was a third of a
ListOffsets round trip here, and a client asking again a few tens of microseconds later
found the loop asleep in epoll_wait every time. Polling (epoll with a zero timeout) for
``idle_poll_us`` after a request finds that next request still awake, which shortened the
round trip at the median and at p99 (measured with a raw ListOffsets loop as in
bench/broker.py's lookup section).
Seastar's reactor, under ScyllaDB and Redpanda, polls the same way before it sleeps
(``--idle-poll-time-us``).

It polls only while it pays: after a request that came within ``idle_poll_us`` of the one
before it (a client in a request-response loop, or a busy connection). Traffic spaced wider
than the window costs at most one window at the end of each burst, and an idle broker
nothing. 0 turns polling off.

Only the event loop thread calls it.
"""

from __future__ import annotations

import asyncio
import time


class IdlePoller:
    def __init__(self, idle_poll_us: int) -> None:
        self.window_s = idle_poll_us / 1e6
        self._last_end = float("-inf")  # when the previous request's handling ended
        self._until = 0.0  # poll until then (perf_counter seconds)
        self._polling_on: asyncio.AbstractEventLoop | None = None

    def handled(self, loop: asyncio.AbstractEventLoop, started: float) -> None:
        """Called once a request's bytes were handled (``started``: perf_counter at their
        arrival): poll on if it came close behind the previous one."""
        if self.window_s <= 0:
            return
        now = time.perf_counter()
        close_behind = started - self._last_end <= self.window_s
        self._last_end = now
        if not close_behind:
            return
        self._until = now + self.window_s
        if self._polling_on is not loop:
            self._polling_on = loop
            loop.call_soon(self._poll, loop)

    def _poll(self, loop: asyncio.AbstractEventLoop) -> None:
        """A ready callback makes the loop's next wait a zero-timeout poll."""
        if time.perf_counter() < self._until:
            loop.call_soon(self._poll, loop)
        else:
            self._polling_on = None
