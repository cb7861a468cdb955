"""File naming inside a partition directory.

``DATA_DIR/<topic>-<partition>/`` holds, per segment, ``<base>.log``, ``<base>.index``,
``<base>.timeindex`` and ``<base>.ctindex`` where ``<base>`` is the segment's base offset
zero-padded to 20 digits (so a plain ``ls`` lists segments in offset order), plus the
partition's ``recovery-point`` checkpoint and, after a clean stop, its ``clean-shutdown`` marker.

A deleted partition's directory is first renamed aside to
``<topic>-<partition>.<unique>.deleted`` (one rename), and its files are removed afterwards,
in a thread: unlinking a gigabyte of segments keeps the disk busy. The name is free at
once for a topic created again, and directories a crash left renamed go at the next start.
Every name stays within ``NAME_MAX`` (255 bytes): a partition directory is at most 254
(a 249-character topic, ``-`` and a partition below 10000), and a retired name keeps only as
much of the topic as fits beside the 41 bytes of ``.<unique>.deleted`` (the unique part alone
tells retired directories apart; the rest is for an operator reading ``ls``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import uuid
from pathlib import Path

LOG_SUFFIX = ".log"
OFFSET_INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
CREATE_TIME_INDEX_SUFFIX = ".ctindex"
INDEX_SUFFIXES = (OFFSET_INDEX_SUFFIX, TIME_INDEX_SUFFIX, CREATE_TIME_INDEX_SUFFIX)
SEGMENT_SUFFIXES = (LOG_SUFFIX,) + INDEX_SUFFIXES
TEMP_SUFFIX = ".tmp"

RETIRED_SUFFIX = ".deleted"  # a partition directory never ends so: it ends in -<partition>
NAME_MAX = 255  # bytes in one file name (Linux's NAME_MAX, and ext4's, xfs's and tmpfs's)

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


def retired_name(name: str) -> str:
    """A unique name for a partition directory ``name`` set aside for deletion, at most
    ``NAME_MAX`` bytes: ``<topic>-<partition>.<uuid hex>.deleted``, the topic cut short if
    the whole would not fit (the partition number is kept)."""
    tail = f".{uuid.uuid4().hex}{RETIRED_SUFFIX}"
    room = NAME_MAX - len(tail.encode())
    if len(name.encode()) > room:
        stem, dash, partition = name.rpartition("-")
        keep = f"{dash}{partition}" if dash and partition.isdigit() else ""
        name = name.encode()[:room - len(keep.encode())].decode("utf-8", "ignore") + keep
    return name + tail


def retire_directory(directory: Path) -> Path:
    """Rename a deleted partition's directory aside; returns its new path."""
    retired = directory.with_name(retired_name(directory.name))
    os.rename(directory, retired)
    return retired


def partition_directories(data_dir: Path, topic: str) -> list[Path]:
    """The partition directories of ``topic`` in ``data_dir`` (``<topic>-<digits>``)."""
    if not data_dir.is_dir():
        return []
    pattern = re.compile(re.escape(topic) + r"-\d+")
    return sorted(entry for entry in data_dir.iterdir()
                  if pattern.fullmatch(entry.name) and entry.is_dir())


def retired_directories(data_dir: Path) -> list[Path]:
    """Directories renamed aside for deletion whose files are not all gone yet."""
    if not data_dir.is_dir():
        return []
    return sorted(entry for entry in data_dir.iterdir()
                  if entry.name.endswith(RETIRED_SUFFIX) and entry.is_dir())


def remove_retired(directory: Path) -> None:
    """Delete a retired directory and its files (slow for a big log: not on the event loop)."""
    shutil.rmtree(directory)


def ensure_directory(path: Path) -> None:
    """Make ``path`` (and its parents) unless it is a directory already. Checked with a
    ``stat`` first: ``mkdir`` of an existing directory still locks its parent exclusively,
    and a broker's start opens ten thousand logs of one data directory from many threads."""
    if not os.path.isdir(path):
        path.mkdir(parents=True, exist_ok=True)


def read_small(path: Path) -> bytes:
    """A small file's whole content, in three system calls (``Path.read_bytes`` makes
    nine): a broker's start reads four such files per partition. Raises OSError."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, mode: int | None = None,
                     sync: bool = True) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new content.
    ``mode`` (e.g. 0o600 for a file holding credentials): the file's permissions from the
    moment it is created, whatever the umask, so a secret is never readable by others.
    ``sync`` False: no fsync; the caller makes it durable (``sync_filesystem``) before
    anything that relies on it."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    try:
        if mode is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)  # a leftover could have wider permissions
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask took away
            handle = os.fdopen(fd, "wb")
        else:
            handle = open(temp, "wb")
        with handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:  # a full disk: leave no half-written temp file taking space
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if sync:
        fsync_directory(path.parent)


def sync_filesystem(path: Path) -> None:
    """Make every change on ``path``'s file system durable at once (``syncfs``): one call for
    what would be thousands of directory fsyncs at a broker's start. ``os.sync`` (every file
    system) where the C library's ``syncfs`` cannot be called."""
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"syncfs {path}: {os.strerror(error)}")
    finally:
        os.close(fd)


def fsync_directory(directory: Path) -> None:
    """Make a create, rename or unlink in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
