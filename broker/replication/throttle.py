"""``CatchUpThrottle``: the leader's bytes/s quota on what replicas catching up fetch.

Why only those: a reassignment's new replicas start with an empty log and would copy a whole
partition as fast as the leader can read it, taking disk and network from producers and from
the in-sync followers that acks=all waits for. Kafka's ``leader.replication.throttled.rate``
limits such traffic; here it applies by itself to the replicas a reassignment is adding
while they are outside the ISR (the ones ``PartitionState.adding`` names), never to in-sync
followers, whose fetches make the high watermark move.

A token bucket over this broker's monotonic clock, shared by every partition it leads: it
refills at ``rate`` bytes/s up to one second's worth; a read may take what is left and run
the bucket into debt by at most one read (the fetch's own size bound), and while it is in
debt catch-up reads return nothing (the follower asks again after its long poll). So over
any stretch longer than a second the catch-up bytes stay within ``rate`` per second plus
one fetch. ``rate`` 0 turns it off (the bytes are still counted). O(1) per partition read;
no I/O. Metrics: ``tslog_reassignment_catch_up_bytes_total`` and
``tslog_reassignment_throttled_reads_total``.
"""

from __future__ import annotations

import time
from typing import Callable

from ..metrics import replication as metrics


class CatchUpThrottle:
    def __init__(self, rate_bytes_s: int,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate_bytes_s
        self.monotonic = monotonic
        self.tokens = float(rate_bytes_s)
        self.updated = monotonic()
        self.sent_bytes = 0  # catch-up bytes served (metrics)
        self.held_back = 0  # catch-up reads refused while over the quota (metrics)

    def set_rate(self, rate_bytes_s: int) -> None:
        """A new quota from now on (Kafka's dynamic ``leader.replication.throttled.rate``):
        the bucket keeps what it holds, capped at one second of the new rate."""
        self.rate = rate_bytes_s
        self.tokens = min(self.tokens, float(rate_bytes_s))

    def allowance(self) -> int:
        """Bytes a catch-up read may return now: 0 while over the quota, else what the
        bucket holds (at least 1, so a read makes progress); -1 when there is no limit."""
        if self.rate <= 0:
            return -1
        now = self.monotonic()
        self.tokens = min(float(self.rate), self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens <= 0:
            self.held_back += 1
            metrics.catch_up_throttled()
            return 0
        return max(1, int(self.tokens))

    def spent(self, size: int) -> None:
        """A catch-up read returned ``size`` bytes."""
        self.sent_bytes += size
        metrics.catch_up_served(size)
        if self.rate > 0:
            self.tokens -= size
