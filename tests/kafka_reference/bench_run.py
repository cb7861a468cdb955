"""Run a bench script at its smoke size and read back the table it printed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def quick_table(bench: Path) -> tuple[str, list[list[str]]]:
    """``bench --quick`` run to completion: its output, and every table row's cells (the
    header first). A failed run fails the caller with the output's tail."""
    done = subprocess.run([sys.executable, str(bench), "--quick"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]]
            for line in done.stdout.splitlines() if line.startswith("|")]
    return done.stdout, rows
