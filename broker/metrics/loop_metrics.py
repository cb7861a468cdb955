"""Counters and histograms written only by the event loop, read by the scrape thread.

Why not prometheus_client's own: every ``inc`` and ``observe`` there takes a lock (a
histogram one per bucket it touches and one for the sum), about 0.5 us for a counter and 1.2
us for a histogram here, paid on every request. The data path's metrics have one writer, the
event loop, so they need no lock: a child is a float or a list of ints that the loop adds to,
and a scrape copies it (``list(...)`` and attribute reads are atomic under the GIL) and
derives the cumulative buckets and ``_count`` from that one copy, so a scrape is always
self-consistent in its buckets (the ``_sum`` may miss an observation made in between, which
the next scrape shows). About 0.1 us per ``inc`` and 0.25 us per ``observe``.

Rule: only the event loop thread may call ``inc``/``observe``/``labels``/``remove``. Metrics
other threads update (replication's, the recovery gauges) stay prometheus_client objects.
"""

from __future__ import annotations

import bisect
import math
from typing import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramChild:
    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last slot is (largest bound, +Inf)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


class _Family:
    """A named metric with fixed label names and children created on first use."""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...],
                 new_child: Callable[[], object]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._new_child = new_child
        self.children: dict[tuple[str, ...], object] = {}
        if not labelnames:
            self.children[()] = new_child()

    def labels(self, *values: str):
        key = tuple(str(value) for value in values)
        if len(key) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {key}")
        child = self.children.get(key)
        if child is None:
            child = self.children[key] = self._new_child()
        return child

    def remove(self, *values: str) -> None:
        self.children.pop(tuple(str(value) for value in values), None)

    def _items(self) -> list:
        return list(self.children.items())  # one atomic copy: the loop may add children


class LoopCounter(_Family):
    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...] = ()) -> None:
        super().__init__(name, documentation, labelnames, CounterChild)

    def inc(self, amount: float = 1.0) -> None:
        """For a counter without labels."""
        self.children[()].inc(amount)

    def collect(self) -> Metric:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for key, child in self._items():
            family.add_metric(list(key), child.value)
        return family


class LoopHistogram(_Family):
    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...],
                 buckets: tuple[float, ...]) -> None:
        self.bounds = bounds = tuple(float(b) for b in buckets if not math.isinf(b))
        super().__init__(name, documentation, labelnames, lambda: HistogramChild(bounds))

    def observe(self, value: float) -> None:
        """For a histogram without labels."""
        self.children[()].observe(value)

    def collect(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        bounds = [floatToGoString(bound) for bound in self.bounds] + ["+Inf"]
        for key, child in self._items():
            counts = list(child.counts)
            total_sum = child.sum
            cumulative, running = [], 0
            for bound, count in zip(bounds, counts):
                running += count
                cumulative.append((bound, running))
            family.add_metric(list(key), cumulative, total_sum)
        return family


class LoopMetricsCollector(Collector):
    """Exposes a list of loop-owned families through a prometheus_client registry."""

    def __init__(self, families: list[_Family]) -> None:
        self.families = families

    def describe(self) -> list[Metric]:
        return [family.collect() for family in self.families]

    def collect(self) -> Iterator[Metric]:
        for family in self.families:
            yield family.collect()
