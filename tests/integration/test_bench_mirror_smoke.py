"""``bench/mirror.py --quick`` still runs end to end (so the mirror benchmark cannot rot):
only the tables' shape is asserted, not the timings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "mirror.py"


@pytest.mark.slow
def test_mirror_bench_prints_throughput_and_lag_tables():
    result = subprocess.run([sys.executable, str(BENCH), "--quick"],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "raw send_batch into the target" in out and "tslog mirror source -> target" in out
    assert "Mirror lag under a steady 5,000 records/s" in out and "p99 ms (median)" in out
    assert "max ms (median)" in out
