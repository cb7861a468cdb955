"""``bench/before_after.py --quick`` still runs end to end (so the A/B table cannot rot).

Both sides are this checkout (two brokers and two clients of one interpreter): every row of
the table comes out with a ratio for each round (the acks=all client rows three ways: each
client's default, both plain, both idempotent), the client rows ran under the given
interpreter as ``client_rows.py`` subprocesses, and the temporary data directory is removed.
Nothing about timings is asserted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "before_after.py"
ACKS_ALL = ("acks=all (each one's default)", "acks=all, plain", "acks=all, idempotent")
ROWS = ("produce raw, acks=1", "produce raw, acks=all", "Producer.send() x N, acks=1",
        *(f"Producer.send() x N, {way}" for way in ACKS_ALL), "Producer.send_batch, acks=1",
        *(f"Producer.send_batch, {way}" for way in ACKS_ALL), "raw Fetch loop, 1 MiB",
        "Consumer.poll, decoded", "Consumer.poll_batches", "ListOffsets raw loop, p50",
        "ListOffsets raw loop, p99",
        "Consumer.offsets_for_times, p50", "Consumer.offsets_for_times, p99")


@pytest.mark.slow
def test_before_after_quick_prints_every_row_with_a_ratio_per_round(tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--broker", f"one={sys.executable}",
         "--broker", f"two={sys.executable}", "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "two against one: 2 rounds" in out, out
    table = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
             for line in out.splitlines() if line.startswith("| ") and "---" not in line}
    for row in ROWS:
        unit, one, two, ratio, better, verdict = table[row]
        assert float(one.replace(",", "")) > 0 and float(two.replace(",", "")) > 0, out
        assert "(" in ratio and better in ("higher", "lower"), out
        assert verdict.startswith(("better", "worse", "tie")), out
    for row in ROWS:  # the figures of both rounds, per side
        line = next(line for line in out.splitlines() if line.startswith(f"  {row}: "))
        assert line.count(",") >= 2 and "one " in line and "two " in line, out
    assert list(tmp_path.iterdir()) == []
