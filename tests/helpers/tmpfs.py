"""A size-limited tmpfs for full-disk tests: mounted by the test (root is needed), unmounted
at teardown. A test that cannot mount one is skipped, saying why."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest


@contextlib.contextmanager
def mounted_tmpfs(mount_point: Path, size_bytes: int):
    """Mount a tmpfs of ``size_bytes`` at ``mount_point`` (made if missing) for the block."""
    mount_point.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs",
                             str(mount_point)], capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs (root needed): {result.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def free_bytes(path: Path) -> int:
    stats = os.statvfs(path)
    return stats.f_bavail * stats.f_frsize


def fill_with_a_file(directory: Path) -> Path:
    """Write a file until the file system refuses another byte; returns its path (removing
    it gives the space back)."""
    path = directory / "filler.bin"
    block = b"\xa5" * 65536
    with open(path, "wb", buffering=0) as handle:
        for size in (65536, 4096, 1):
            try:
                while True:
                    handle.write(block[:size])
            except OSError:
                continue
    return path
