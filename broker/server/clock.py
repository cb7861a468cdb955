"""The broker's clock: the wall clock plus the test-only offset, shared by every log.

A module of its own because everything on the request path reads it (appends stamp
LogAppendTime from it, replication times ISR lag by it) while nothing here depends on them.
"""

from __future__ import annotations

import time


class BrokerClock:
    """Wall clock plus the test-only offset.

    docs/protocol.md promises that every batch of one partition in one Produce request gets
    the same LogAppendTime: ``ReplicaLog.append_as_leader`` reads this clock once for them
    all, so nothing here needs to hold the time still.
    """

    def __init__(self, offset_ms: int = 0) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms
