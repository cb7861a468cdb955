"""``bench/partitions.py --quick`` still runs end to end (so the benchmark cannot rot).

It starts its own broker on a free loopback port; this test checks only that it exits 0 and
prints every figure with its target, never a timing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "partitions.py"


@pytest.mark.slow
def test_bench_partitions_quick_prints_every_figure(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--topics", "2", "--partitions", "50",
         "--dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for figure in ("start after clean shutdown (s)", "start after SIGKILL (s)", "RSS idle (MiB)",
                   "descriptors at rest per partition",
                   "one Metadata for every partition (ms, to its last byte)",
                   "one ListOffsets by time for every partition (ms, to its last byte)",
                   "round-robin / one partition",
                   "meanwhile, another connection's slowest ApiVersions round trip (ms)",
                   "produce round-robin right after a clean restart: opens every log"):
        assert figure in result.stdout, result.stdout
    assert result.stdout.count("the same with this client's msgpack decode of it (ms)") == 2
    assert "2 topics x 50 partitions = 100" in result.stdout
    assert list(tmp_path.iterdir()) == []  # the temporary data directory was removed
