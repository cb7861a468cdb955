"""``bench/failover.py`` still runs end to end (so the benchmark cannot rot).

One SIGKILL of the leader, one short pause and a second of load at default settings: the
test checks that it exits 0, prints both tables with a row per prober and counts no false
alarm, never a timing.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults import net

BENCH = Path(__file__).resolve().parents[2] / "bench" / "failover.py"

pytestmark = [pytest.mark.faults, pytest.mark.slow,
              pytest.mark.skipif(net.available() is not None, reason=str(net.available()))]


def test_bench_failover_prints_both_tables_and_no_false_alarm():
    result = subprocess.run(
        [sys.executable, str(BENCH), "--runs", "1", "--kinds", "kill", "--load-s", "1"],
        capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"\|\s+kill \|\s+new leader \|\s+1 \|", result.stdout), result.stdout
    assert re.search(r"\|\s+kill \|\s+producer \(longest wait\) \|\s+1 \|", result.stdout), result.stdout
    alarms = re.findall(r"\| .*(?:pauses of 0.4 session|acks=1 load) \|\s+(\d+) \|",
                        result.stdout)
    assert alarms == ["0", "0"], result.stdout
