"""Kafka RecordBatch v2 <-> tslog batches, one batch at a time, column-wise.

Records stay stored in tslog's own format (``protocol/records.py``); the Kafka listener
converts at its edge. Kafka -> tslog (``kafka_bytes_to_tslog``): the batch decodes to columns
(``record_columns.py``: one walk over the length varints, every field read for all records at
once), and tslog's records section is assembled from those columns directly (int64 times,
int32 lengths, the key and value blobs as gathered) and sealed by ``seal_checked``: no list
per record. CreateTime = base timestamp + each record's delta; headers kept (a null header
value, which tslog's headers cannot hold, becomes ``b""``); the producer id, epoch and base
sequence carried for idempotence. tslog -> Kafka (``tslog_to_kafka``): ``decode_columns``
gives the columns, and ``record_batch.encode_columns`` writes Kafka's records from them with
vectorised varints. The batch is marked LogAppendTime (tslog's LAT as max timestamp, which
Kafka consumers read as every record's timestamp) or CreateTime (each record's own).

A Fetch response holds many stored batches (about nine of 1000 100-byte records per MiB),
and per batch the conversion above is some fifty numpy calls on small arrays: their
overhead, not the bytes, was most of its cost. ``tslog_batches_to_kafka`` converts them
together (up to ``GROUP_BYTES`` of them at a time), equal byte for byte to
``tslog_to_kafka`` per batch: ``decode_batches`` (the
Spark reader's multi-batch decoder, the same checks) gives one set of columns, and
``record_batch.encode_many`` lays out every batch's records with one set of numpy calls,
leaving room for each header, so only the headers and CRCs are per batch.

``kafka_to_tslog`` takes a list-based ``KafkaBatch`` (tools and tests); it goes through
``build_batch``.
"""


from __future__ import annotations

import numpy as np

from .._record_builder import Section, pack_headers, seal_checked
from .._record_check import SECTION_SIZES
from ..batch_header import COMPRESSION_NONE, COMPRESSION_ZSTD, CheckedBatch, parse_header
from ..records import build_batch, decode_batches, decode_columns, split_batches
from . import compression
from .errors import KafkaBatchError
from .one_record import one_record_checked
from .record_batch import (CREATE_TIME, LOG_APPEND_TIME, BatchFields, KafkaBatch,
                           decode_batch_columns, encode_columns, encode_many)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


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


_COUNTING = [np.arange(1 << 12, dtype=np.int64)]


def _counting(n: int) -> np.ndarray:
    """0..n-1, a view of one array kept across calls (grown when a batch is larger): what
    a produced batch's offset deltas must be, compared without a new ``arange`` each time."""
    counting = _COUNTING[0]
    if len(counting) < n:
        counting = _COUNTING[0] = np.arange(max(n, 2 * len(counting)), dtype=np.int64)
    return counting[:n]


def kafka_bytes_to_tslog(data) -> tuple[int, bytes]:
    """(attributes, the tslog batch) of one Kafka batch's bytes, column-wise.

    The same rules and errors as ``kafka_to_tslog`` (which the property tests hold it to),
    plus ``decode_batch``'s errors for malformed bytes; the Kafka attributes are returned so
    the caller can refuse transactional or control batches."""
    attributes, checked = kafka_bytes_to_checked(data)
    return attributes, checked.data


def kafka_bytes_to_checked(data) -> tuple[int, CheckedBatch]:
    """``kafka_bytes_to_tslog`` with the tslog header it packed and the records' CRC
    (``CheckedBatch``): the Kafka listener hands these to the log, which stamps the batch
    without parsing or checksumming it again. They equal what ``validate_batch_for_stamping``
    finds in the bytes (``tests/property/test_kafka_convert_checked.py``)."""
    fields, fast = one_record_checked(data)
    return fast if fast is not None else columnwise_checked(data, fields)


def columnwise_checked(data, fields: tuple | None = None) -> tuple[int, CheckedBatch]:
    """``kafka_bytes_to_checked`` for any batch, column-wise: the general path, which
    ``one_record.one_record_checked`` must equal wherever it answers (``fields``: the
    header it decoded, see ``decode_batch_columns``)."""
    head, columns = _checked_columns(data, fields)
    return head.attributes, _seal_range(head, columns, 0, head.record_count)


def kafka_bytes_to_tslog_within(data, limit: int) -> tuple[int, list[CheckedBatch]]:
    """(attributes, tslog batches as ``CheckedBatch``) of one Kafka batch's bytes: one
    batch, as ``kafka_bytes_to_checked`` gives it, when that is at most ``limit`` bytes; else its records
    cut into consecutive runs (halved until each fits, or is one record) whose batches are.

    Why: a tslog batch is larger than the Kafka batch it came from (fixed-width CreateTimes
    and lengths against Kafka's varints: 116 against about 110 bytes for a 100-byte value,
    16 against 7 for an empty one), and librdkafka fills batches up to ``batch.size``,
    1,000,000 bytes by default, whenever records queue up. Such a batch is within Kafka's
    ``max.message.bytes`` but its tslog batch was not, and the broker answered
    MESSAGE_TOO_LARGE, which librdkafka reports as a permanent delivery failure. A
    non-idempotent batch's records may be stored as several batches (appended all or
    nothing); an idempotent one may not (its sequence numbers name one batch), so the
    caller passes only non-idempotent batches here."""
    fields, fast = one_record_checked(data)
    if fast is not None:
        return fast[0], [fast[1]]
    head, columns = _checked_columns(data, fields)
    runs, out = [(0, head.record_count)], []
    while runs:
        start, stop = runs.pop()
        batch = _seal_range(head, columns, start, stop)
        if batch.header.batch_length <= limit or stop - start == 1:
            out.append(batch)
            continue
        middle = (start + stop) // 2
        runs += [(middle, stop), (start, middle)]  # popped first: the runs stay in order
    return head.attributes, out


def _checked_columns(data, fields: tuple | None):
    head, columns = decode_batch_columns(data, fields=fields)
    n = head.record_count
    if n == 0:
        raise KafkaBatchError("a Kafka batch without records cannot become a tslog batch")
    if not (columns.offset_deltas == _counting(n)).all():
        raise KafkaBatchError("a produced batch must have offset deltas 0..n-1")
    return head, columns


def _seal_range(head, columns, start: int, stop: int) -> CheckedBatch:
    """The tslog batch of records ``start:stop`` of a decoded Kafka batch."""
    n = head.record_count
    whole = start == 0 and stop == n
    key_lengths, value_lengths = columns.key_lengths, columns.value_lengths
    keys, values, deltas = columns.keys, columns.values, columns.timestamp_deltas
    headers = columns.headers
    if not whole:
        keys = _cut(keys, key_lengths, start, stop)
        values = _cut(values, value_lengths, start, stop)
        key_lengths, value_lengths = key_lengths[start:stop], value_lengths[start:stop]
        deltas = deltas[start:stop]
        headers = None if headers is None else headers[start:stop]
    base = head.base_timestamp
    low, high = base + int(deltas.min()), base + int(deltas.max())
    if low < _INT64_MIN or high > _INT64_MAX:
        raise KafkaBatchError("the Kafka batch does not fit a tslog batch: a create time "
                              "does not fit in an int64")
    times = deltas + np.int64(base)
    headers_blob = b""
    if headers is not None:
        headers_blob = pack_headers(
            [[(key, b"" if value is None else value) for key, value in pairs] or None
             for pairs in headers], stop - start)
    parts = [SECTION_SIZES.pack(len(keys), len(values), len(headers_blob)),
             times.astype("<i8", copy=False).tobytes(),
             key_lengths.astype("<i4", copy=False).tobytes(),
             value_lengths.astype("<i4", copy=False).tobytes(), keys, values, headers_blob]
    section = Section(parts, stop - start, int(times[0]), low, high, bool(headers_blob))
    codec = COMPRESSION_NONE if head.compression == compression.NONE else COMPRESSION_ZSTD
    try:
        return seal_checked(section, codec, head.producer_id, head.producer_epoch,
                            head.base_sequence)
    except ValueError as exc:
        raise KafkaBatchError(f"the Kafka batch does not fit a tslog batch: {exc}") from None


def _cut(blob, lengths: np.ndarray, start: int, stop: int):
    """The bytes of records ``start:stop`` in a blob of records' bytes back to back
    (a length of -1, a null, holds none)."""
    sizes = np.maximum(lengths, 0)
    first = int(sizes[:start].sum())
    return memoryview(blob)[first:first + int(sizes[start:stop].sum())]


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
    key_lengths = np.where(columns.key_valid, np.diff(columns.key_offsets), -1)
    value_lengths = np.where(columns.value_valid, np.diff(columns.value_offsets), -1)
    lat = timestamp_type == LOG_APPEND_TIME
    return encode_columns(
        columns.create_time, key_lengths, columns.keys, value_lengths, columns.values,
        columns.headers, codec=codec,
        timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME,
        max_timestamp=columns.log_append_time if lat else None,
        base_offset=columns.base_offset,
        partition_leader_epoch=(header.leader_epoch if partition_leader_epoch is None
                                else partition_leader_epoch),
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence)


# Stored bytes converted by one set of numpy calls: large enough that the fixed cost is
# spread (a few hundred batches of 1000 100-byte records), small enough that the temporary
# arrays stay bounded whatever a Fetch asks for (fetch_max_bytes is 50 MiB by default, and
# records of varying size are copied through an index array of 4 bytes per byte).
GROUP_BYTES = 4 << 20


def tslog_batches_to_kafka(records, timestamp_type: int = LOG_APPEND_TIME, *,
                           group_bytes: int = GROUP_BYTES) -> bytes:
    """Kafka batches (uncompressed) holding stored tslog batches ``records`` (back to back,
    at least one), each batch as ``tslog_to_kafka`` converts it, joined: the same bytes and
    the same refusals (``BatchFormatError`` for a corrupt batch, ``ValueError`` for
    timestamps a Kafka batch cannot hold), at a constant number of numpy calls per
    ``group_bytes`` of stored batches rather than per batch (module docstring)."""
    batches = split_batches(records)
    groups, group, size = [], [], 0
    for batch in batches:
        if group and size + len(batch) > group_bytes:
            groups.append(group)
            group, size = [], 0
        group.append(batch)
        size += len(batch)
    groups.append(group)
    pieces = [_group_to_kafka(group, timestamp_type) for group in groups]
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _group_to_kafka(batches: list, timestamp_type: int) -> bytes:
    columns = decode_batches(batches)
    fields = []
    lat = timestamp_type == LOG_APPEND_TIME
    for batch, log_append_time in zip(batches, columns.log_append_times):
        header = parse_header(batch)
        fields.append(BatchFields(header.base_offset, header.leader_epoch,
                                  log_append_time if lat else None, header.producer_id,
                                  header.producer_epoch, header.base_sequence))
    key_lengths = np.diff(columns.key_offsets)
    if columns.key_valid is not None:
        key_lengths[~columns.key_valid] = -1
    value_lengths = np.diff(columns.value_offsets)
    if columns.value_valid is not None:
        value_lengths[~columns.value_valid] = -1
    keys = columns.keys[0] if len(batches) == 1 else b"".join(columns.keys)
    values = columns.values[0] if len(batches) == 1 else b"".join(columns.values)
    return encode_many(columns.create_time, key_lengths, keys, value_lengths, values,
                       columns.headers, columns.starts, fields,
                       timestamp_type=LOG_APPEND_TIME if lat else CREATE_TIME)
