"""Which wire error code answers which failure of a request's work, and a partition not here.

Shared by the data path (produce, fetch, list offsets) and the topic services (a disk
failing under a topic change), so the mapping and its logging rules live in one place:
routine refusals are one log line, unexpected exceptions are logged with their traceback
here and never sent to the client.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode

from ..metadata import TopicMetadata
from ..replication.partition import NotLeaderError
from ..storage import (
    CorruptRecordError,
    IdempotentBatchesError,
    InvalidTimestampError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from ..topics import TopicManager
from ..storage.producers import InvalidProducerEpochError, OutOfOrderSequenceError

log = logging.getLogger("tslog.broker.handlers")

# A topic the request gate denied: the data service answers its partitions with this.
TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)


_CODES = {
    CorruptRecordError: ErrorCode.CORRUPT_MESSAGE,
    InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    OffsetOutOfRangeError: ErrorCode.OFFSET_OUT_OF_RANGE,
    IdempotentBatchesError: ErrorCode.INVALID_RECORD,
    LogClosedError: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # deleted while the request ran
    OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    NotLeaderError: ErrorCode.NOT_LEADER_OR_FOLLOWER,
}

# Codes a healthy client meets in normal operation (stale metadata, a consumer at the end).
_ROUTINE = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OFFSET_OUT_OF_RANGE,
                      ErrorCode.NOT_LEADER_OR_FOLLOWER})


def error_code_for(exc: BaseException, where: str) -> ErrorCode:
    """The wire code for a storage failure; anything unexpected is logged with its traceback
    here (never sent) and answered as UNKNOWN_SERVER_ERROR."""
    code = _CODES.get(type(exc))
    if code is not None:
        # One line per refusal, never the traceback: the client was told the code.
        level = logging.INFO if code in _ROUTINE else logging.WARNING
        log.log(level, "%s refused: %s: %s", where, code.name, exc)
        return code
    if isinstance(exc, OSError):
        log.error("%s: storage I/O error: %r", where, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR
    log.error("%s: unexpected error", where, exc_info=exc)
    return ErrorCode.UNKNOWN_SERVER_ERROR


def missing_code(known: TopicManager, topic: str, partition: int) -> ErrorCode:
    """The answer for a partition this broker holds no log of: NOT_LEADER_OR_FOLLOWER when
    the cluster has it (the client should look up its leader), else
    UNKNOWN_TOPIC_OR_PARTITION."""
    metadata: TopicMetadata | None = known.topics.get(topic)
    if metadata is not None and 0 <= partition < metadata.partitions:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
