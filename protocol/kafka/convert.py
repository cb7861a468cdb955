"""Kafka RecordBatch v2 <-> tslog batches, one batch at a time.

Records stay stored in tslog's own format (``protocol/records.py``); the Kafka listener
converts at its edge. Kafka -> tslog: the decoded batch's key, value and timestamp columns go
to ``build_batch`` in one call (tslog's builder is column-wise), CreateTime = base timestamp +
each record's delta (done as one list comprehension), headers kept (a null header value, which
tslog's headers cannot hold, becomes ``b""``), the producer id, epoch and base sequence carried
for idempotence. tslog -> Kafka: ``decode_columns`` gives the columns without a loop, the key
and value blobs are cut with the same slicing the tslog client uses, and the batch is marked
LogAppendTime (tslog's LAT as max timestamp, which Kafka consumers read as every record's
timestamp) or CreateTime (each record's own).

The per-record Python work left is Kafka's varint framing itself: reading a Kafka batch walks
its records once, and writing one emits each record's varints (``record_batch.py`` says why
neither can be done column-wise). Nothing else touches records one by one.
"""

from __future__ import annotations

from ..batch_header import COMPRESSION_NONE, COMPRESSION_ZSTD, parse_header
from ..records import build_batch, decode_columns, field_slices
from . import compression
from .errors import KafkaBatchError
from .record_batch import CREATE_TIME, LOG_APPEND_TIME, KafkaBatch, encode_batch


def kafka_to_tslog(batch: KafkaBatch) -> bytes:
    """A tslog batch holding ``batch``'s records. Kafka producers write offset deltas
    0..n-1; a batch with gaps (only a compacting broker makes those) is refused, since a
    tslog batch's offsets are contiguous. Compressed Kafka batches are stored zstd."""
    n = batch.record_count
    if n == 0:
        raise KafkaBatchError("a Kafka batch without records cannot become a tslog batch")
    if batch.offset_deltas != list(range(n)):
        raise KafkaBatchError("a produced batch must have offset deltas 0..n-1")
    base = batch.base_timestamp
    create_times = [base + delta for delta in batch.timestamp_deltas]
    headers = None
    if any(batch.headers):
        headers = [[(key, b"" if value is None else value) for key, value in pairs] or None
                   for pairs in batch.headers]
    codec = COMPRESSION_NONE if batch.compression == compression.NONE else COMPRESSION_ZSTD
    try:
        return build_batch(batch.values, keys=batch.keys, create_times=create_times,
                           headers=headers, compression=codec, producer_id=batch.producer_id,
                           producer_epoch=batch.producer_epoch,
                           base_sequence=batch.base_sequence)
    except (ValueError, TypeError) as exc:
        raise KafkaBatchError(f"the Kafka batch does not fit a tslog batch: {exc}") from None


def tslog_to_kafka(batch, timestamp_type: int = LOG_APPEND_TIME, *,
                   codec: int = compression.NONE, partition_leader_epoch: int | None = None
                   ) -> bytes:
    """A Kafka batch holding one stored tslog batch's records at their offsets.

    ``timestamp_type``: ``LOG_APPEND_TIME`` (the topic's ``message.timestamp.type`` is
    LogAppendTime: max timestamp = tslog's LAT) or ``CREATE_TIME`` (each record's CreateTime).
    Raises ``BatchFormatError`` for a corrupt tslog batch.
    """
    header = parse_header(batch)
    columns = decode_columns(batch)
    keys = list(field_slices(columns.keys, columns.key_offsets, columns.key_valid))
    values = list(field_slices(columns.values, columns.value_offsets, columns.value_valid))
    headers = None if columns.headers is None else [list(h) if h else None for h in columns.headers]
    times = columns.create_time.tolist()
    lat = timestamp_type == LOG_APPEND_TIME
    return encode_batch(
        values, keys, times, headers, codec=codec,
        timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
        max_timestamp=columns.log_append_time if lat else None,
        base_offset=columns.base_offset,
        partition_leader_epoch=(header.leader_epoch if partition_leader_epoch is None
                                else partition_leader_epoch),
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence)
