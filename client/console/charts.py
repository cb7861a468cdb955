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


def bar_chart(starts_ms: list, counts: list, href: str, label: str) -> str:
    """An SVG chart of ``counts`` per bucket; a bar links to ``href`` + ``&time=`` + its
    start. What all bars of a window share (position, width, time label) is formatted once
    per window (``_frame``), and the link once per chart: a topic page draws up to 65 charts
    of the same buckets, and per bar only the height and the count differ."""
    if not counts:
        return "<p>No buckets in this window.</p>"
    peak = max(counts) or 1
    frame, width = _frame(tuple(starts_ms), len(counts))
    link = escape(href)
    room = HEIGHT - AXIS
    bars = []
    for (start, x, title), count in zip(frame, counts):
        height = room * count / peak
        bars.append(
            f'<a href="{link}&amp;time={start}"><rect class="bar" data-start="{start}" '
            f'data-count="{count}" x="{x}" y="{room - height:.2f}" width="{width}" '
            f'height="{max(height, 0):.2f}"><title>{title}: {count} records</title></rect></a>')
    first, last = _time_label(starts_ms[0]), _time_label(starts_ms[-1])
    return (f'<svg class="chart" role="img" aria-label="{escape(label)}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" height="{HEIGHT}">'
            f'{"".join(bars)}'
            f'<text x="0" y="{HEIGHT - 4}" class="axis">{escape(first)}</text>'
            f'<text x="{WIDTH}" y="{HEIGHT - 4}" text-anchor="end" class="axis">'
            f'{escape(last)}</text>'
            f'<text x="{WIDTH}" y="12" text-anchor="end" class="axis">max {peak}</text></svg>')


@lru_cache(maxsize=16)
def _frame(starts_ms: tuple, bars: int) -> tuple[tuple, str]:
    """([(start, x, escaped time label)] per bar, the bars' width), for ``bars`` bars."""
    step = WIDTH / bars
    frame = tuple((int(start), f"{index * step:.2f}", escape(_time_label(start)))
                  for index, start in enumerate(starts_ms[:bars]))
    return frame, f"{max(step - 1, 0.5):.2f}"


@lru_cache(maxsize=4096)
def _time_label(start_ms: int) -> str:
    """A bucket's start for people, formatted once per bucket (a window's first and last
    are formatted again for its axis)."""
    return format_time_ms(start_ms)
