"""``bench/storage.py --quick`` still runs end to end (so the benchmark cannot rot), and its
lookup table says where this machine's timing floor is beside the lookups' p99, and how many
evicted file pages the kernel read again while they ran.

It checks only that the bench exits 0 and prints its tables and notes, never a timing.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "storage.py"


@pytest.mark.slow
def test_bench_storage_quick_prints_its_tables_and_the_timing_floor(tmp_path):
    result = subprocess.run([sys.executable, str(BENCH), "--quick", "--runs", "1",
                             "--dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for title in ("Append (100-byte values", "Lookup by LogAppendTime, in process",
                  "Open descriptors and lookups across 100 segments"):
        assert title in result.stdout, result.stdout
    assert re.search(r"p99 grows [\d.]+x from 10,000 to 100,000 records", result.stdout)
    assert re.search(r"timing floor, same loop: a pure-Python call of p50 [\d.]+ us .* has "
                     r"p99 [\d.]+ us \([\d.]+-[\d.]+\); the largest lookup p99 above is "
                     r"[\d.]+x that", result.stdout), result.stdout
    assert "file pages re-read after eviction, machine-wide" in result.stdout
    assert list(tmp_path.iterdir()) == []  # the temporary logs were removed
