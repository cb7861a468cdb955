"""The broker's clock: the wall clock plus the test-only offset, shared by every log.

A module of its own because everything on the request path reads it (appends stamp
LogAppendTime from it, replication times ISR lag by it) while nothing here depends on them.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator


class BrokerClock:
    """Wall clock plus the test-only offset, which can be frozen for one produce request.

    Why freeze: docs/protocol.md promises that every batch of one partition in one Produce
    request gets the same LogAppendTime. Appends run synchronously on the event loop, so
    holding the time still for the duration of one partition's appends is race-free.
    """

    def __init__(self, offset_ms: int = 0) -> None:
        self.offset_ms = offset_ms
        self._frozen_ms: int | None = None

    def now_ms(self) -> int:
        if self._frozen_ms is not None:
            return self._frozen_ms
        return time.time_ns() // 1_000_000 + self.offset_ms

    @contextlib.contextmanager
    def frozen(self) -> Iterator[int]:
        if self._frozen_ms is not None:  # nested: keep the outer instant
            yield self._frozen_ms
            return
        self._frozen_ms = self.now_ms()
        try:
            yield self._frozen_ms
        finally:
            self._frozen_ms = None
