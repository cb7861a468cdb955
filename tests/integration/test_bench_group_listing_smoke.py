"""``bench/group_listing.py`` still runs end to end (so the benchmark cannot rot), and its
count guards ListGroups: a listing reads the coordinators' listings, a few Python calls per
group, never a description of every member (issue 41's one view of a group first made
ListGroups describe each group: about 35 calls per group against main's 3.5). Counted, not
timed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "group_listing.py"
LIST_CALLS_PER_GROUP_MAX = 10


@pytest.mark.slow
def test_bench_group_listing_prints_both_rows_and_listing_stays_cheap():
    result = subprocess.run([sys.executable, str(BENCH), "--groups", "20", "--members", "3",
                             "--runs", "2"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "groups: 40 (20 x 3 members + 20 offsets only)" in result.stdout, result.stdout
    rows = {match[0].strip(): float(match[1]) for match in re.findall(
        r"^(ListGroups|ConsumerGroupDescribe \(all\))\s+[\d,]+\s+([\d.]+)", result.stdout,
        flags=re.MULTILINE)}
    assert set(rows) == {"ListGroups", "ConsumerGroupDescribe (all)"}, result.stdout
    assert rows["ListGroups"] <= LIST_CALLS_PER_GROUP_MAX, result.stdout
