"""The README's runnable blocks, taken out as a reader would copy them, and the one change
a test makes to each: the broker's address (the README's 127.0.0.1:9092 becomes the test
broker's ephemeral port) and ``.venv/bin/`` (this interpreter's directory, the venv the
README's own install line made)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    """The indented block after "Then, in another shell:"."""
    after = README.split("Then, in another shell:\n", 1)[1]
    block = re.match(r"\n((?:    .*\n)+)", after).group(1)
    return [line[4:] for line in block.splitlines()]


def section(heading: str) -> str:
    return README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def python_blocks(heading: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", section(heading), re.S)


def python_block(heading: str) -> str:
    (code,) = python_blocks(heading)
    return code


def run_shell(line: str, bootstrap: str, cwd: Path, bindir: Path | None = None) -> str:
    """``bindir``: the venv whose ``bin`` stands for ``.venv/bin/`` (default: this one's)."""
    bindir = bindir or Path(sys.executable).parent
    line = line.replace(".venv/bin/", f"{bindir}/").replace("127.0.0.1:9092", bootstrap)
    result = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120,
                            cwd=cwd, env={**os.environ, "TSLOG_BOOTSTRAP": bootstrap})
    assert result.returncode == 0, (line, result.stderr)
    return result.stdout


def run_python(code: str, bootstrap: str, cwd: Path, env: dict | None = None,
               timeout_s: float = 120, python: str = sys.executable) -> str:
    result = subprocess.run([python, "-c", code.replace("127.0.0.1:9092", bootstrap)],
                            capture_output=True, text=True, timeout=timeout_s, cwd=cwd,
                            env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
