"""tslog's storage engine: segments, memory-mapped indexes, partition logs, recovery.

Synchronous by design (no asyncio here): the broker calls it from its event loop for cheap
operations and from a thread for recovery; a log hands the disk waits of its own decisions
(seals of rolled segments, the next segment's files, flush-policy fsyncs) to its data
directory's I/O worker (``background.py``), whose futures the server may await.
"""

from .clock import Clock, ManualClock, SystemClock
from .config import ConfigError, LogConfig
from .errors import (
    CorruptIndexError,
    CorruptRecordError,
    IdempotentBatchesError,
    InvalidTimestampError,
    LogClosedError,
    NonContiguousOffsetError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
)
from .log import PartitionLog
from .types import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendInfo,
    ConvertedBatches,
    DeletedSegment,
    LeaderAppend,
    OffsetAndTimestamp,
)
from .recovery import RecoveryReport

__all__ = [
    "AppendInfo",
    "Clock",
    "ConvertedBatches",
    "ConfigError",
    "CorruptIndexError",
    "CorruptRecordError",
    "DeletedSegment",
    "EARLIEST_TIMESTAMP",
    "IdempotentBatchesError",
    "InvalidTimestampError",
    "LATEST_TIMESTAMP",
    "LeaderAppend",
    "LogClosedError",
    "LogConfig",
    "MAX_TIMESTAMP",
    "ManualClock",
    "NonContiguousOffsetError",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "RecordTooLargeError",
    "RecoveryReport",
    "StorageError",
    "SystemClock",
]
