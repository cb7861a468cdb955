"""The log start offset records were deleted up to (Kafka's DeleteRecords), kept in the
partition directory's ``log-start-offset`` file: one decimal number and a newline.

Why a file of its own: retention moves the log start by deleting whole segments, so the first
segment's base offset says where the log starts. DeleteRecords may start it inside a
segment, and that must survive a restart or a crash (a consumer must never see a deleted
record again), so the offset is written (``files.write_atomically``: temp file, fsync,
rename, directory fsync) before the request is answered. The log start is the larger of the
file's offset and the first segment's base; once retention has deleted past it, the file
says nothing new, and a missing or unreadable file means no records were deleted this way.
"""

from __future__ import annotations

from pathlib import Path

from . import files

LOG_START_OFFSET_FILE = "log-start-offset"


def load(directory: Path) -> int:
    """The offset the file holds, 0 when there is none (or it cannot be read: the segments
    then say where the log starts, as before any DeleteRecords)."""
    try:
        return max(0, int((directory / LOG_START_OFFSET_FILE).read_text().strip() or 0))
    except (OSError, ValueError):
        return 0


def save(directory: Path, offset: int) -> None:
    """Persist ``offset`` durably (the caller answers the request only after this)."""
    files.write_atomically(directory / LOG_START_OFFSET_FILE, f"{offset}\n".encode())
