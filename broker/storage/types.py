"""The small values the storage engine hands back, and the special ListOffsets times."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from tslog.protocol.batch_header import CheckedBatch

# The special ListOffsets times are the wire's; storage answers them directly.
from tslog.protocol.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP

__all__ = [
    "AppendInfo",
    "ConvertedBatches",
    "LeaderAppend",
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


class LeaderAppend(NamedTuple):
    """What ``ReplicaLog.append_as_leader`` answers for one request's batches: the first
    and last offsets, their LogAppendTime (one for all of them), their bytes and newest
    CreateTime (for the metrics), and whether they were a retry of an idempotent batch
    already in the log (then the offsets and LAT are the original's, nothing was written)."""

    base_offset: int
    last_offset: int
    log_append_time: int
    batch_bytes: int
    max_create_time: int
    duplicate: bool


@dataclass(frozen=True, slots=True)
class ConvertedBatches:
    """A partition's batches as a front door converted them (the Kafka listener), each with
    the header it packed and its records' CRC (``CheckedBatch``), for
    ``ReplicaLog.append_as_leader``. ``sent_bytes``: the size of the one idempotent batch as
    its producer sent it, counted against ``max.message.bytes`` as Kafka counts it (a tslog
    batch takes more room than the Kafka batch it comes from); None otherwise. A type of its
    own: native bodies are decoded from msgpack, which never makes one, so only the broker's
    own adapter can hand the log a batch it does not check in full."""

    batches: tuple[CheckedBatch, ...]
    sent_bytes: int | None = None


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


class DeletedSegment(NamedTuple):
    base_offset: int
    next_offset: int
    size_bytes: int
    reason: str  # "time" or "size"
