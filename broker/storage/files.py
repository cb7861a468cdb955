"""File naming inside a partition directory.

``DATA_DIR/<topic>-<partition>/`` holds, per segment, ``<base>.log``, ``<base>.index``,
``<base>.timeindex`` and ``<base>.ctindex`` where ``<base>`` is the segment's base offset
zero-padded to 20 digits (so a plain ``ls`` lists segments in offset order), plus the
partition's ``recovery-point`` checkpoint and, after a clean stop, its ``clean-shutdown`` marker.
"""

from __future__ import annotations

import os
from pathlib import Path

LOG_SUFFIX = ".log"
OFFSET_INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
CREATE_TIME_INDEX_SUFFIX = ".ctindex"
INDEX_SUFFIXES = (OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX, CREATE_TIME_INDEX_SUFFIX)
SEGMENT_SUFFIXES = (LOG_SUFFIX,) + INDEX_SUFFIXES
TEMP_SUFFIX = ".tmp"

RECOVERY_POINT_FILE = "recovery-point"
CLEAN_SHUTDOWN_FILE = "clean-shutdown"


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:020d}{suffix}"


def parse_base_offset(name: str) -> int | None:
    """Return the base offset encoded in a segment file name, or None for any other file."""
    stem, dot, _ = name.partition(".")
    if not dot or len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new content."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a create, rename or unlink in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
