"""``ReplicationRates``: Kafka's broker-level replication throttles, as set at run time by
IncrementalAlterConfigs (``kafka-reassign-partitions --execute --throttle``, cleared by
``--verify``).

Why a broker-wide object and not per connection: the rate is the broker's, shared by every
partition it leads (``replication/throttle.py``), and the next connection must see what
this one set. ``leader.replication.throttled.rate`` is tslog's catch-up quota
(``leader_replication_throttled_rate``): setting it retunes the leader's token bucket at
once; deleting it goes back to the broker's configured value. tslog throttles catch-up on
the leader's side only, so ``follower.replication.throttled.rate`` is kept (DescribeConfigs
shows it) but changes nothing. Neither outlives a restart: the broker starts from its
config file again (docs/kafka.md, "What differs").
"""

from __future__ import annotations

from typing import NamedTuple

from ...replication.throttle import CatchUpThrottle

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
RATES = (LEADER_RATE, FOLLOWER_RATE)


class DynamicEntry(NamedTuple):
    name: str
    value: str


class ReplicationRates:
    def __init__(self, throttle: CatchUpThrottle, configured_rate: int) -> None:
        self.throttle = throttle
        self.configured_rate = configured_rate  # the config file's, restored by a delete
        self.dynamic: dict[str, int] = {}

    def set(self, name: str, rate: int) -> None:
        self.dynamic[name] = rate
        if name == LEADER_RATE:
            self.throttle.set_rate(rate)

    def delete(self, name: str) -> None:
        self.dynamic.pop(name, None)
        if name == LEADER_RATE:
            self.throttle.set_rate(self.configured_rate)

    def entries(self) -> list[DynamicEntry]:
        """The rates set at run time, in a stable order."""
        return [DynamicEntry(name, str(self.dynamic[name])) for name in RATES
                if name in self.dynamic]
