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

import os
from pathlib import Path

from . import files
from .errors import OffsetOutOfRangeError

LOG_START_OFFSET_FILE = "log-start-offset"


class StartOffset:
    """The file's offset for one log (0 when there is no file, or it cannot be read: the
    segments then say where the log starts, as before any DeleteRecords)."""

    def __init__(self, directory: Path) -> None:
        """Reads the file through a string path (a broker's start does this per partition);
        the ``Path`` is made only for a write (``path``)."""
        self._directory = directory
        try:
            text = files.read_small(os.path.join(directory, LOG_START_OFFSET_FILE))
            self.offset = max(0, int(text.strip() or 0))
        except (OSError, ValueError):
            self.offset = 0

    @property
    def path(self) -> Path:
        return Path(self._directory) / LOG_START_OFFSET_FILE

    def advance(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        """Start the log at ``offset`` if that is later than it starts now, durably before
        this returns (the caller answers the request only after it).

        Raises:
            OffsetOutOfRangeError: ``offset`` is past the log end.
        """
        if offset > log_end_offset:
            raise OffsetOutOfRangeError(f"offset {offset} is past the log end {log_end_offset}")
        if offset > log_start_offset:
            files.write_atomically(self.path, f"{offset}\n".encode())
            self.offset = offset
