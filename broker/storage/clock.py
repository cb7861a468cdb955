"""Where the storage engine gets the time from.

Time is injected so that tests never sleep and so that a broker can be run with a skewed
clock (a test-only offset set by the daemon). Storage only ever asks for wall-clock
milliseconds: LogAppendTime, time-based rolls and retention are all measured on it.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch."""


class SystemClock:
    """The host's wall clock, optionally shifted by a fixed offset (for skew tests)."""

    def __init__(self, offset_ms: int = 0) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms


class ManualClock:
    """A clock that moves only when told to, forwards or backwards."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = now_ms

    def now_ms(self) -> int:
        return self._now_ms

    def set(self, now_ms: int) -> None:
        self._now_ms = now_ms

    def advance(self, delta_ms: int) -> None:
        self._now_ms += delta_ms
