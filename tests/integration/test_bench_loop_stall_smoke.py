"""``bench/loop_stall.py --quick`` still runs end to end (so the stall measurement cannot rot).

It starts a real broker under the loop probe, produces for two seconds per row and prints its
table; nothing about timings is asserted, only that every row (with the lags less the
loop's waits for a CPU, never above the lags) and the watchdog's stack section come out and
the temporary data directory is removed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "loop_stall.py"


@pytest.mark.slow
def test_loop_stall_quick_prints_both_rows_and_the_stall_stacks(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--stacks", "3", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "Event-loop lag during 2 s of produce" in out, out
    for header in ("p50 ms", "p99 ms", "max ms", "rolls", "own p99 ms", "own max ms",
                   "CPU wait ms"):
        assert header in out, out
    rows = [line for line in out.splitlines() if line.startswith("| this tree")]
    assert [row.split("|")[2].strip() for row in rows] == ["1 MiB", "1 GiB"], out
    assert int(rows[0].split("|")[3]) > 0, out  # 1 MiB segments did roll
    assert int(rows[1].split("|")[3]) == 0, out
    for row in rows:  # less the run-queue wait, a lag can only shrink
        cells = [cell.strip() for cell in row.split("|")]
        assert 0 <= float(cells[10]) <= float(cells[8]), out
    assert out.count("where the threads were while the loop was late") == 2, out
    assert list(tmp_path.iterdir()) == []
