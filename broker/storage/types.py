"""The small values the storage engine hands back, and the special ListOffsets times."""

from __future__ import annotations

from typing import NamedTuple

# The special ListOffsets times are the wire's; storage answers them directly.
from tslog.protocol.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP

__all__ = [
    "AppendInfo",
    "DeletedSegment",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "OffsetAndTimestamp",
]


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
