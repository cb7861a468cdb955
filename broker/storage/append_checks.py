"""The checks a batch passes before a log takes it: one set of rules, for a leader and a
follower, in one place.

A leader takes a batch within the topic's size limits (``max.message.bytes`` against the
size its producer sent, ``segment.bytes`` against the size stored), well formed (header,
CRC, every record decodable: ``validate_batch_for_stamping``) and with CreateTimes within
``message.timestamp.before/after.max.ms`` of the broker's time. A follower takes what its
leader took: the stored-size limit and the format, not the leader's clock or producer
limits. Each rule maps to one typed error, so nothing reaches the wire as a traceback.

What a check returns is the batch as a ``CheckedBatch`` (its header, parsed once here, and
its records' running CRC), which the log stamps without reading the batch again. The
broker's Kafka listener builds that tuple itself when it converts a batch (``convert``
packs the header and computes the CRC as it seals the records, which it decoded and
checked column-wise): such a batch passes the size and time rules only.
"""

from __future__ import annotations

from tslog.protocol.batch_header import (HEADER_SIZE, BatchFormatError, BatchHeader,
                                         CheckedBatch, validate_batch,
                                         validate_batch_for_stamping)
from tslog.protocol.records import split_batches

from .config import LogConfig
from .errors import CorruptRecordError, InvalidTimestampError, RecordTooLargeError

_new_tuple = tuple.__new__  # a NamedTuple from a tuple, without ``_make``'s Python frame
_from_bytes = int.from_bytes  # batch_length is bytes [16, 20), little-endian


def for_leader(config: LogConfig, data, now_ms: int, sent_bytes: int | None = None
               ) -> CheckedBatch:
    """``data`` (exactly one batch) as a leader takes it at broker time ``now_ms``.
    ``sent_bytes``: its size as its producer sent it, when a front door converted it.

    Raises:
        RecordTooLargeError, CorruptRecordError, InvalidTimestampError.
    """
    problem = config.size_problem(len(data)) if sent_bytes is None else \
        config.size_problem(sent_bytes, stored=len(data))
    if problem is not None:
        raise RecordTooLargeError(problem)
    try:
        checked = _new_tuple(CheckedBatch, (data, *validate_batch_for_stamping(data)))
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
    header = checked[1]
    if problem := config.create_time_problem(header.min_create_time, header.max_create_time,
                                             now_ms):
        raise InvalidTimestampError(problem)
    return checked


def converted_for_leader(config: LogConfig, checked: CheckedBatch, now_ms: int,
                         sent_bytes: int | None = None) -> CheckedBatch:
    """A batch the broker's own converter built (see the module's docstring): the size and
    time rules of ``for_leader``, with the header it carries."""
    header = checked[1]
    stored = header.batch_length
    problem = config.size_problem(stored) if sent_bytes is None else \
        config.size_problem(sent_bytes, stored=stored)
    if problem is not None:
        raise RecordTooLargeError(problem)
    if problem := config.create_time_problem(header.min_create_time, header.max_create_time,
                                             now_ms):
        raise InvalidTimestampError(problem)
    return checked


def split_for_leader(config: LogConfig, records, now_ms: int) -> list[CheckedBatch]:
    """Every batch of ``records`` (batches back to back, as a Produce carries them),
    checked before any is written, so a bad one later in a request cannot leave its
    predecessors behind. One batch, the common case, is not split (no view is made): its
    length field, read without a Python call, says so.

    Raises:
        as ``for_leader``; CorruptRecordError also when ``records`` holds no whole batch.
    """
    size = len(records)
    if size >= HEADER_SIZE and _from_bytes(records[16:20], "little") == size:
        return [for_leader(config, records, now_ms)]
    try:
        batches = split_batches(records)
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
    if not batches:
        raise CorruptRecordError("records holds no batch")
    return [for_leader(config, batch, now_ms) for batch in batches]


def for_follower(config: LogConfig, data) -> BatchHeader:
    """The header of ``data`` (one batch its leader stamped) if a follower may copy it.

    Raises:
        RecordTooLargeError (over ``segment.bytes``), CorruptRecordError.
    """
    if (problem := config.stored_size_problem(len(data))) is not None:
        raise RecordTooLargeError(problem)
    try:
        return validate_batch(data)
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
