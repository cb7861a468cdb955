"""Counters and histograms written only by the event loop, read by the scrape thread.

Why not prometheus_client's own: every ``inc`` and ``observe`` there takes a lock (a
histogram one per bucket it touches and one for the sum), paid on every request. The data path's metrics have one writer, the
event loop, so they need no lock: a child is a float or a list of ints that the loop adds to,
and a scrape copies it (``list(...)`` and attribute reads are atomic under the GIL) and
derives the cumulative buckets and ``_count`` from that one copy, so a scrape is always
self-consistent in its buckets (the ``_sum`` may miss an observation made in between, which
the next scrape shows). Each child's
sample names and escaped labels are prepared once, when it is made (see ``text.py``).

Rule: only the event loop thread may call ``inc``/``observe``/``labels``/``remove``. Metrics
other threads update (replication's, the recovery gauges) stay prometheus_client objects.
"""

from __future__ import annotations

import bisect
import math
from typing import Callable

from .text import header, label_text, number, with_label


class CounterChild:
    __slots__ = ("value", "prefix")

    def __init__(self, prefix: str) -> None:
        self.value = 0.0
        self.prefix = prefix  # "name{labels} "

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramChild:
    __slots__ = ("bounds", "counts", "sum", "bucket_prefixes", "count_prefix", "sum_prefix")

    def __init__(self, bounds: tuple[float, ...], name: str, labels: str) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last slot is (largest bound, +Inf)
        self.sum = 0.0
        les = [number(bound) for bound in bounds] + ["+Inf"]
        self.bucket_prefixes = [f"{name}_bucket{with_label(labels, 'le', le)} " for le in les]
        self.count_prefix = f"{name}_count{labels} "
        self.sum_prefix = f"{name}_sum{labels} "

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def observe_many(self, value: float, count: int) -> None:
        """``count`` observations of ``value`` at the cost of one."""
        self.counts[bisect.bisect_left(self.bounds, value)] += count
        self.sum += value * count

    def render(self, lines: list[str]) -> None:
        counts = list(self.counts)
        total_sum = self.sum
        running = 0
        for prefix, count in zip(self.bucket_prefixes, counts):
            running += count
            lines.append(f"{prefix}{running}.0\n")
        lines.append(f"{self.count_prefix}{running}.0\n{self.sum_prefix}{number(total_sum)}\n")


class _Family:
    """A named metric with fixed label names and children created on first use."""

    kind = ""

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...],
                 new_child: Callable[[str], object]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._new_child = new_child  # label text -> child
        self.children: dict[tuple[str, ...], object] = {}
        if not labelnames:
            self.children[()] = new_child("")

    def labels(self, *values: str):
        key = tuple(str(value) for value in values)
        child = self.children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, got {key}")
            child = self.children[key] = self._new_child(label_text(self.labelnames, key))
        return child

    def remove(self, *values: str) -> None:
        self.children.pop(tuple(str(value) for value in values), None)

    def render(self, lines: list[str]) -> None:
        """Append this family in text format (HELP, TYPE, every child) to ``lines``."""
        header(lines, self.name, self.documentation, self.kind)
        for child in list(self.children.values()):  # one atomic copy: the loop may add some
            self._render_child(child, lines)

    def _render_child(self, child, lines: list[str]) -> None:
        lines.append(f"{child.prefix}{number(child.value)}\n")


class LoopCounter(_Family):
    kind = "counter"

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...] = ()) -> None:
        super().__init__(name, documentation, labelnames,
                         lambda labels: CounterChild(f"{name}{labels} "))

    def inc(self, amount: float = 1.0) -> None:
        """For a counter without labels."""
        self.children[()].inc(amount)


class LoopHistogram(_Family):
    kind = "histogram"

    def __init__(self, name: str, documentation: str, labelnames: tuple[str, ...],
                 buckets: tuple[float, ...]) -> None:
        bounds = tuple(float(b) for b in buckets if not math.isinf(b))
        super().__init__(name, documentation, labelnames,
                         lambda labels: HistogramChild(bounds, name, labels))

    def observe(self, value: float) -> None:
        """For a histogram without labels."""
        self.children[()].observe(value)

    def _render_child(self, child, lines: list[str]) -> None:
        child.render(lines)
