"""``bench/reassign.py --quick`` still runs end to end on a tiny move (so the benchmark cannot rot).

It starts its own etcd and brokers on free loopback ports; this test checks only that it
exits 0 and prints each mode's row and the target line, never a timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "reassign.py"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_bench_reassign_prints_every_mode():
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for row in ("|         no move |", "|            move |", "| move, throttled |"):
        assert row in result.stdout, result.stdout
    assert "throttled move >= 0.7x no move:" in result.stdout
    assert "load average" in result.stdout
