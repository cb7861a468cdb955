"""Saying once, not a thousand times, that another protocol's client is knocking.

A Kafka client pointed at a tslog port reconnects every second or so for as long as it runs;
each attempt is refused (``protocol.foreign``). The operator needs to hear of it once, with the
client's address and name; the repeats go to the debug log.
"""

from __future__ import annotations

WARNING_INTERVAL_S = 60.0
_MAX_HOSTS = 1024


class ForeignClientNotes:
    """When each client host was last warned about (loop time)."""

    def __init__(self, interval_s: float = WARNING_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._warned: dict[str, float] = {}

    def first_in_a_while(self, host: str, now: float) -> bool:
        """True at most once per ``interval_s`` per host."""
        last = self._warned.get(host)
        if last is not None and now - last < self.interval_s:
            return False
        if len(self._warned) >= _MAX_HOSTS:  # a scan from many hosts: forget the old notes
            self._warned = {h: t for h, t in self._warned.items() if now - t < self.interval_s}
        self._warned[host] = now
        return True
