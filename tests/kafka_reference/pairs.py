"""The two brokers a differential test talks to, and running one tool against both at once."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

_names = itertools.count()



@dataclass(frozen=True)
class Side:
    name: str  # "kafka" or "tslog"
    bootstrap: str  # the Kafka protocol's host:port


@dataclass(frozen=True)
class Pair:
    kafka: Side
    tslog: Side
    native: str  # tslog's own port, for checks through tslog's client

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.kafka, self.tslog


def unique(prefix: str) -> str:
    """A topic or group name no other test of the session uses."""
    return f"{prefix}-{next(_names)}"


def both(pair: Pair, run, *args):
    """``run(side, *args)`` against the reference and tslog at once: (kafka's, tslog's)."""
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(run, side, *args) for side in pair.sides]
        return tuple(future.result() for future in futures)
