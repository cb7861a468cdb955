"""One process per data directory: an exclusive ``flock`` on ``DIR/.lock``.

Why: two brokers (or a broker and a tool) on one directory each keep their own idea of a
log's end, so the second one's acknowledged writes are overwritten by the first, and the
loser's recovery and clean-shutdown markers corrupt the winner's crash recovery. Kafka takes
a ``.lock`` in each log directory for the same reason; so does tslog, before anything reads,
recovers or writes there.

``flock`` belongs to the open file, so a lock dies with its holder (SIGKILL included): no
stale lock needs cleaning by hand. The holder writes its pid into the file, only so that a
refusal can name it; the lock, not the pid, decides. A loser opens the file read-only and
writes nothing (it creates the directory and file only when neither exists, i.e. when there
is nothing of anyone's to touch).

Within one process a directory's lock is shared and counted: the broker holds it from start
to exit, and every ``PartitionLog`` of the directory holds it while it is open, so a log
opened by a tool or test without a broker is guarded too, and a log the broker opens costs
no descriptor of its own. The shared count is keyed by the directory's absolute path as a
string: a broker's start takes it once per log from many threads, and a ``Path`` key would
run Python code (its hash) while holding the guard every one of them waits on.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
from pathlib import Path

from .errors import StorageError

LOCK_FILE = ".lock"


class DataDirectoryLockedError(StorageError):
    """Another process holds the data directory's lock; nothing here touched the directory."""

    def __init__(self, directory: Path, holder_pid: int | None) -> None:
        holder = f"process {holder_pid}" if holder_pid else "another process"
        super().__init__(
            f"data directory {directory} is in use by {holder} (it holds "
            f"{directory / LOCK_FILE}); one broker or tool per data directory")
        self.directory = directory
        self.holder_pid = holder_pid


class _Held:
    """A lock this process holds, with how many users share it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 0


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def _key(directory: Path | str) -> str:
    return os.path.abspath(directory)


def acquire(directory: Path | str) -> str:
    """Take (or share, within this process) the lock of ``directory``, making the directory
    if it does not exist. Returns the key to pass to ``release``.

    Raises DataDirectoryLockedError if another process holds it, OSError if the directory
    cannot be made or the lock file opened."""
    key = _key(directory)
    with _guard:
        held = _held.get(key)
        if held is None:
            held = _held[key] = _Held(_lock_file(Path(key)))
        held.users += 1
    return key


def release(key: str) -> None:
    """Give back one use of the lock taken by ``acquire``; the last one closes the file,
    which ends the lock."""
    with _guard:
        held = _held.get(key)
        if held is None:
            return
        held.users -= 1
        if held.users <= 0:
            del _held[key]
            os.close(held.fd)


def holds(directory: Path | str) -> bool:
    """Whether this process holds the lock of ``directory``."""
    with _guard:
        return _key(directory) in _held


def _lock_file(directory: Path) -> int:
    """Open and lock ``directory/.lock`` without changing anything a holder owns."""
    path = directory / LOCK_FILE
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        pid = _holder_pid(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise DataDirectoryLockedError(directory, pid) from None
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # a full disk: the pid is only for messages, the lock itself holds
    return fd


def _holder_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
