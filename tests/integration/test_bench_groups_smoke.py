"""``bench/groups.py`` still runs end to end (so the group timings cannot rot): one run of
each measurement on a tiny topic; only the tables' shape is asserted, not the timings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "groups.py"


@pytest.mark.slow
def test_groups_bench_prints_movement_and_throughput_tables():
    result = subprocess.run([sys.executable, str(BENCH), "--runs", "1", "--records", "6000"],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "kill -9 of 1 of 3 members -> all its partitions read again" in out, out
    assert "3rd member joins 2 -> its first record" in out, out
    cells = [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("|")]
    assert [cell for cell in cells if cell.isdigit()] == ["1", "3"], out  # the members rows
