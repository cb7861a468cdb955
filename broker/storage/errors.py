"""Errors raised by the storage engine.

Each maps to one wire error code (the server does the mapping); they carry a message meant for
an operator's log, never for the wire.
"""

from __future__ import annotations


class StorageError(Exception):
    """Base class for storage failures the caller is expected to handle."""


class CorruptRecordError(StorageError):
    """A batch failed its header or CRC check; nothing of it was written (CORRUPT_MESSAGE)."""


class InvalidTimestampError(StorageError):
    """A batch's CreateTime lies outside the topic's bounds; nothing was written (INVALID_TIMESTAMP)."""


class RecordTooLargeError(StorageError):
    """A batch is larger than max.message.bytes or segment.bytes (MESSAGE_TOO_LARGE)."""


class OffsetOutOfRangeError(StorageError):
    """A read asked for an offset below the log start or above the log end (OFFSET_OUT_OF_RANGE)."""


class NonContiguousOffsetError(StorageError):
    """A replicated batch does not start at the log end offset, or its time goes backwards."""


class CorruptIndexError(StorageError):
    """An index file failed a sanity check; the segment rebuilds it from the log."""


class LogClosedError(StorageError):
    """The log was closed or deleted while a caller still used it."""


class IdempotentBatchesError(CorruptRecordError):
    """More than one batch for a partition in one request, one of them idempotent: the
    sequence check is per batch, so (as in Kafka) such a batch must travel alone (INVALID_RECORD)."""
