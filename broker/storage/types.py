"""The small values the storage engine hands back, and the special ListOffsets times."""

from __future__ import annotations

from typing import NamedTuple

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


class AppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    log_append_time: int
    batch_bytes: int


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class DeletedSegment(NamedTuple):
    base_offset: int
    next_offset: int
    size_bytes: int
    reason: str  # "time" or "size"
