"""``bench/console.py`` still runs end to end on a small topic (so the benchmark cannot rot).

It starts its own broker and console on free loopback ports; this test checks only that it
exits 0 and prints every figure with its target, never a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "console.py"

pytestmark = [pytest.mark.console, pytest.mark.timeout(300)]


def test_bench_console_prints_every_figure(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--partitions", "20", "--runs", "1", "--dir",
         str(tmp_path)], capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for figure in ("cluster page", "topics page", "group page", "24-hour chart by hour",
                   "find by time, every partition", "find by offset", "offset_columns ms"):
        assert figure in result.stdout, result.stdout
    assert "one topic of 20 partitions" in result.stdout
    assert list(tmp_path.iterdir()) == []  # the temporary directory was removed
