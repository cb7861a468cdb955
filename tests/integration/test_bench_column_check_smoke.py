"""``bench/column_check.py --quick`` still runs end to end (so the crossover measurement that
sets ``SCALAR_MAX_RECORDS`` cannot rot). Asserts nothing about timings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "column_check.py"


def test_column_check_bench_prints_both_paths_and_the_crossover():
    result = subprocess.run([sys.executable, str(BENCH), "--quick"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for header in ("| records", "scalar us", "numpy us", "scalar/numpy"):
        assert header in out, out
    assert "SCALAR_MAX_RECORDS = " in out and "the scalar path" in out, out
