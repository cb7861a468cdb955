"""Bar charts as inline SVG, drawn on the server: no JavaScript, no build step.

Each bar is a link to "find by time" at its bucket's start, so a click on a spike shows the
records in it. Every bar carries its count in ``data-count`` and a ``<title>`` (the browser's
tooltip), which is also how the end-to-end tests read the chart.
"""

from __future__ import annotations

from functools import lru_cache
from html import escape

from tslog.client.times import format_time_ms

WIDTH, HEIGHT, AXIS = 900, 180, 20


def bar_chart(starts_ms: list, counts: list, link, label: str) -> str:
    """An SVG chart of ``counts`` per bucket; ``link(start_ms)`` is a bar's target URL."""
    if not counts:
        return "<p>No buckets in this window.</p>"
    peak = max(counts) or 1
    step = WIDTH / len(counts)
    bars = []
    for start, count in zip(starts_ms, counts):
        index = len(bars)
        height = (HEIGHT - AXIS) * count / peak
        x, y = index * step, HEIGHT - AXIS - height
        title = f"{_time_label(start)}: {count} records"
        bars.append(
            f'<a href="{escape(link(start))}"><rect class="bar" data-start="{start}" '
            f'data-count="{count}" x="{x:.2f}" y="{y:.2f}" width="{max(step - 1, 0.5):.2f}" '
            f'height="{max(height, 0):.2f}"><title>{escape(title)}</title></rect></a>')
    first, last = _time_label(starts_ms[0]), _time_label(starts_ms[-1])
    return (f'<svg class="chart" role="img" aria-label="{escape(label)}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" height="{HEIGHT}">'
            f'{"".join(bars)}'
            f'<text x="0" y="{HEIGHT - 4}" class="axis">{escape(first)}</text>'
            f'<text x="{WIDTH}" y="{HEIGHT - 4}" text-anchor="end" class="axis">'
            f'{escape(last)}</text>'
            f'<text x="{WIDTH}" y="12" text-anchor="end" class="axis">max {peak}</text></svg>')


@lru_cache(maxsize=4096)
def _time_label(start_ms: int) -> str:
    """A bucket's start for people. Cached: a topic page draws the same buckets in the
    topic's chart and in each partition's (up to 65 charts), and formatting a datetime
    costs more than the rest of its bar."""
    return format_time_ms(start_ms)
