"""The README's "Metrics" list and what /metrics serves name the same tslog_ metrics."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from tslog.broker.metrics.server import render

README = Path(__file__).resolve().parents[3] / "README.md"


def documented() -> set[str]:
    text = README.read_text()
    section = text[text.index("\n## Metrics\n"):]
    rows = [line for line in section.splitlines() if line.startswith("| `tslog_")]
    return {name for row in rows for name in re.findall(r"`(tslog_[a-z_]+)`", row.split("|")[1])}


async def test_every_served_metric_is_documented_and_every_documented_one_served(broker):
    text = render(broker.scrape_sources, asyncio.get_running_loop()).decode()
    served = set(re.findall(r"^# TYPE (tslog_[a-z_]+) ", text, re.MULTILINE))
    assert len(served) == 39, served
    assert served == documented()
