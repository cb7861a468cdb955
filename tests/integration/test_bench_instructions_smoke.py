"""``bench/instructions.py`` still runs end to end under callgrind (so the benchmark cannot
rot): every row, handler and whole connection, prints a positive instruction count, and a
request costs more through the connection than its handler alone (the connection adds the
framing, decoding and ordering the handler rows leave out)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "instructions.py"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_bench_instructions_prints_every_row():
    result = subprocess.run([sys.executable, str(BENCH), "--requests", "2"],
                            capture_output=True, text=True, timeout=880)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = {name.strip(): int(count.replace(",", "")) for name, count in re.findall(
        r"^\| ([a-z_ ()]+) \| ([\d,]+) \|", result.stdout, flags=re.MULTILINE)}
    ports = ("native", "kafka")
    apis = ("produce", "fetch", "list_offsets")
    expected = {f"{port} {api}{tail}" for port in ports for api in apis
                for tail in ("", " (connection)")}
    assert set(rows) == expected, result.stdout
    assert all(count > 0 for count in rows.values()), result.stdout
    for port in ports:
        for api in apis:
            assert rows[f"{port} {api} (connection)"] > rows[f"{port} {api}"], result.stdout
