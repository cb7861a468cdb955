"""``Clock``: the one thing the group services read from the broker's clock.

A protocol here, not the server's ``BrokerClock`` itself, because the groups sit below the
server (tests/test_tidy.py: ``broker/groups`` imports nothing of ``broker/server``); the
broker hands its ``BrokerClock`` in, a test may hand any object with ``now_ms``.
"""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch, as the broker stamps LogAppendTime."""
        ...
