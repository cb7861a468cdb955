"""How fast one address may open connections that must log in: a token bucket per address.

Why: every connection that has not logged in costs the broker a SCRAM exchange (a key
derivation on the client's side, hashing and a decoy on ours) and, with TLS, a handshake.
The count caps (``connection_registry``) bound how many such connections one address holds
at once; this bounds how many it may *start* per second, so a loop of connect, guess, close
(a password brute force, a reconnect storm) from one address cannot take the broker's CPU
from everyone else. Kafka's equivalent is the per-IP ``connection_creation_rate`` quota.

Each address has a bucket of ``rate`` tokens, refilled at ``rate`` per second; a new
connection takes one, and one that finds the bucket empty is refused. Memory is bounded: a
bucket that has refilled completely is the same as none, so such buckets are forgotten when
the table grows past ``MAX_ADDRESSES``.
"""

from __future__ import annotations

MAX_ADDRESSES = 4096


class ConnectionRate:
    """Token buckets per address; ``rate`` new connections per second (0: no limit)."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when)

    def __len__(self) -> int:
        """How many addresses have a bucket (bounded by ``MAX_ADDRESSES``)."""
        return len(self._buckets)

    def allow(self, address: str, now: float) -> bool:
        """Take a token of ``address``'s bucket at ``now`` (monotonic seconds); False if
        it has none left (the connection is over the rate)."""
        if self.rate <= 0:
            return True
        tokens, when = self._buckets.get(address, (float(self.rate), now))
        tokens = min(float(self.rate), tokens + (now - when) * self.rate)
        if tokens < 1.0:
            self._buckets[address] = (tokens, now)
            return False
        if len(self._buckets) >= MAX_ADDRESSES and address not in self._buckets:
            self._forget_full(now)
        self._buckets[address] = (tokens - 1.0, now)
        return True

    def _forget_full(self, now: float) -> None:
        """Drop the buckets that have refilled (they hold nothing a new one would not)."""
        rate = self.rate
        self._buckets = {address: (tokens, when)
                         for address, (tokens, when) in self._buckets.items()
                         if tokens + (now - when) * rate < rate}
