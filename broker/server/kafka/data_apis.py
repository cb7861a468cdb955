"""Kafka's Produce, Fetch and ListOffsets, served by the data service both ports call.

Each adapter translates a Kafka body once into the service's typed request
(``broker/data/requests.py``), calls the service (through the connection's gate when the
authorizer is on: ``services.py``), and writes the Kafka response from its results. So acks
0/1/-1, group commit, the idempotent producers' duplicate and sequence checks, the
CreateTime bounds, the high watermark, long polls and ACLs are the native port's, not copies.

Records are converted at this edge (``tslog.protocol.kafka.convert``): a produced Kafka
batch becomes one tslog batch before the service sees it, handed on with the header
the conversion packed (``storage.ConvertedBatches``), so the log stamps it without parsing
it again; each fetched tslog batch
becomes one Kafka batch marked with the topic's ``message.timestamp.type`` (LogAppendTime:
tslog's LAT; CreateTime: each record's own), all of a partition's batches in one
conversion (a constant number of numpy calls, not one set per batch). ListOffsets by time
searches the index of the same type, so a Kafka client's ``offsets_for_times`` equals
tslog's own lookup.

Kafka's features tslog does not have are answered, not faked: a transactional batch is
refused with INVALID_REQUEST (transactions are not served), fetch sessions are never opened
(session id 0: clients send full fetches), and read_committed reads up to the high watermark,
which is Kafka's last stable offset when no transaction exists.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import NamedTuple

from tslog.protocol.errors import BatchFormatError, ErrorCode
from tslog.protocol.kafka import convert, record_batch
from tslog.protocol.kafka.errors import KafkaBatchError
from tslog.protocol.messages import ApiKey

from ...data.pending import Pending
from ...data.requests import (
    FetchRequest,
    ListOffsetsRequest,
    ProduceRequest,
    RequestDenied,
)
from ...storage import ConvertedBatches
from .request_info import KafkaRequestInfo
from .services import KafkaServices

log = logging.getLogger("tslog.broker.kafka")

# Produce requests and Fetch responses converting more records than this go to a worker
# thread: column-wise conversion costs time in proportion to the bytes of small records
# (a Fetch's batches converted at once), so 128 KiB keeps the loop's stall short and a
# larger request pays the thread hop instead. The hop is not free: a single consumer's raw
# 1 MiB Fetch loop reads fewer records a second through it than with the conversion on the
# loop (which then stalls every other connection for the whole conversion); slicing the
# conversion on the loop between awaits (128 KiB slices) was slower still, as each slice
# pays the fixed numpy cost again (bench/kafka.py prints the Fetch rates).
OFF_LOOP_BYTES = 128 * 1024
_TRANSACTIONAL = 0x10  # RecordBatch attributes: the transactional and control bits
_CONTROL = 0x20
_CORRUPT = int(ErrorCode.CORRUPT_MESSAGE)
_TIMESTAMP_TYPE = {"LogAppendTime": record_batch.LOG_APPEND_TIME,
                   "CreateTime": record_batch.CREATE_TIME}


def then(result, finish):
    """``finish(result)`` now, or once the service's awaitable is done; ``finish``
    may itself return an awaitable (work handed to a thread), which is awaited too. A
    ``Pending`` (a single broker's acks=all produce) stays one: its answer is built in the
    call that settles it, with no task."""
    if type(result) is Pending:
        return result.then(finish)
    if inspect.isawaitable(result):
        async def later():
            done = finish(await result)
            return (await done) if inspect.isawaitable(done) else done
        return later()
    done = finish(result)
    if inspect.isawaitable(done):
        async def converted():
            return await done
        return converted()
    return done


# ------------------------------------------------------------------------------------ produce


def _to_tslog(records, limit: int | None = None) -> ConvertedBatches:
    """A Kafka ``records`` field (batches back to back) as tslog batches, each with the
    header the conversion packed and its records' CRC, so the log stamps them without
    parsing or checksumming them again; for one idempotent batch, its size as sent.

    ``limit``: the partition's largest batch (``max.message.bytes``, or ``segment.bytes`` if
    smaller). A Kafka batch within it whose tslog batch is not (tslog's fixed-width columns
    take more room than Kafka's varints) is taken as Kafka would take it: stored as several
    tslog batches when it is not idempotent (``convert.kafka_bytes_to_tslog_within``);
    stored whole when it is (its sequence numbers name one batch, so a retry is recognised
    as the same batch), the log counting ``max.message.bytes`` against the Kafka batch's
    size, as Kafka does. A Kafka batch over the limit is refused MESSAGE_TOO_LARGE by the
    log, as Kafka would.

    Raises:
        KafkaBatchError: a malformed batch (``UnsupportedCompression`` for a codec this
            install cannot read), or a transactional or control batch.
    """
    pieces, sent = [], None
    for piece in record_batch.split_batches(records):
        attributes, checked = convert.kafka_bytes_to_checked(piece)
        if attributes & (_TRANSACTIONAL | _CONTROL):
            raise _Transactional("transactional batches are not served (no transactions)")
        header = checked.header
        if header.producer_id >= 0:
            sent = len(piece)
        elif limit is not None and header.batch_length > limit >= len(piece):
            pieces += convert.kafka_bytes_to_tslog_within(piece, limit)[1]
            continue
        pieces.append(checked)
    if not pieces:
        raise KafkaBatchError("records holds no batch")
    # several: the log refuses them if one is idempotent, so no size as sent applies
    return ConvertedBatches(tuple(pieces), sent if len(pieces) == 1 else None)


class Refused(NamedTuple):
    """A partition of a Kafka Produce refused before the data service saw it."""

    error_code: int
    error_message: str | None


class _Transactional(KafkaBatchError):
    error_code = ErrorCode.INVALID_REQUEST


def _convert_produce(services: KafkaServices, body: dict, info: KafkaRequestInfo) -> list:
    """One outcome per partition of a Kafka Produce body, in its order: the partition's
    converted batches (a ``ProducePartition``'s fields), or why they were refused (a
    ``Refused``). Pure apart from logging: it may run in a thread."""
    outcomes: list = []
    for group in body["topic_data"]:
        name = group["name"]
        for entry in group["partition_data"]:
            index = entry["index"]
            try:
                batches = _to_tslog(entry["records"], services.batch_limit(name, index))
                outcomes.append((name, index, batches))
            except KafkaBatchError as exc:
                outcomes.append(Refused(int(getattr(exc, "error_code", _CORRUPT)), str(exc)))
                log.info("%s: produce %r-%d refused: %s", info.client_host, name, index, exc)
    return outcomes


def _append(services: KafkaServices, body: dict, outcomes: list):
    """Hand the converted batches to the data service (which appends them now) and return
    the Kafka answer, or an awaitable of it, or None for acks = 0."""
    acks = body["acks"]
    if acks not in (-1, 0, 1):  # Kafka's INVALID_REQUIRED_ACKS, on every partition
        refusal = Refused(int(ErrorCode.INVALID_REQUIRED_ACKS), None)
        return _produce_response(services, body, [refusal] * len(outcomes), ())
    partitions = [outcome for outcome in outcomes if type(outcome) is not Refused]
    result = ()
    if partitions:
        result = services.data.produce(
            ProduceRequest(acks, max(body["timeout_ms"], 0), partitions))
    if acks == 0:
        return None
    return then(result, lambda results: _produce_response(services, body, outcomes, results))


def produce(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    """Convert and append. A request carrying more than ``OFF_LOOP_BYTES`` of records is
    converted in a worker thread; its batches, and those of every request the connection
    sends after it, are still appended in arrival order (``ProduceOrder``), since a
    pipelining producer's sequence numbers depend on it. acks = 0 requests, which get no
    answer to hang a task on, convert on the loop (and wait for nothing: an acks = 0
    producer sends only acks = 0 requests)."""
    order = services.produce_order
    size = sum(len(entry["records"] or b"") for group in body["topic_data"]
               for entry in group["partition_data"])
    if body["acks"] == 0 or (size <= OFF_LOOP_BYTES and order.tail is None):
        return _append(services, body, _convert_produce(services, body, info))
    previous = order.tail
    turn = order.tail = asyncio.get_running_loop().create_future()

    async def later():
        try:
            converted = await asyncio.to_thread(_convert_produce, services, body, info) \
                if size > OFF_LOOP_BYTES else _convert_produce(services, body, info)
            if previous is not None:
                await previous
            result = _append(services, body, converted)
        finally:
            turn.set_result(None)
            if order.tail is turn:
                order.tail = None
        return (await result) if inspect.isawaitable(result) else result
    return later()


def _produce_response(services: KafkaServices, body: dict, outcomes: list, results) -> dict:
    """The Kafka answer in the request's order: each partition's result from the data
    service, or why it was refused before (``outcomes``)."""
    each = iter(results)
    outcome_of = iter(outcomes)
    responses = []
    for group in body["topic_data"]:
        name = group["name"]
        out = []
        for entry in group["partition_data"]:
            index = entry["index"]
            outcome = next(outcome_of)
            if type(outcome) is Refused:
                out.append({"index": index, "error_code": outcome[0], "base_offset": -1,
                            "log_append_time_ms": -1, "log_start_offset": -1,
                            "error_message": outcome[1]})
                continue
            result = next(each)
            code = int(result.error_code)
            lat = -1
            if code == 0 and services.timestamp_type(name, index) == "LogAppendTime":
                lat = result.log_append_time
            out.append({"index": index, "error_code": code, "base_offset": result.base_offset,
                        "log_append_time_ms": lat, "log_start_offset": result.log_start_offset,
                        "error_message": result.error_message})  # v8+ carry it
        responses.append({"name": name, "partition_responses": out})
    return {"responses": responses, "throttle_time_ms": 0}


# -------------------------------------------------------------------------------------- fetch


def _after_produces(services: KafkaServices, read):
    """``read()`` once the connection's earlier Produce requests are in the log.

    Kafka handles a connection's requests one at a time, so a Fetch or ListOffsets sent
    behind a Produce sees its records. Here a large Produce converts in a worker thread
    (``produce``) while the loop goes on with the requests behind it: those that read the
    log wait for the last Produce still converting (``ProduceOrder.tail``; the Produces
    before it append first), the rest need not."""
    tail = services.produce_order.tail
    if tail is None:
        return read()

    async def later():
        await asyncio.shield(tail)  # a cancelled reader must not cancel the Produce's turn
        result = read()
        return (await result) if inspect.isawaitable(result) else result
    return later()


def fetch(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    return _after_produces(services, lambda: _fetch(services, body, version))


def _fetch(services: KafkaServices, body: dict, version: int):
    max_bytes = body["max_bytes"] if version >= 3 else services.config.fetch_max_bytes
    request = FetchRequest(
        -1,  # a Kafka client is always a consumer here, never a follower
        max(body["max_wait_ms"], 0), max(body["min_bytes"], 0), max(max_bytes, 0),
        [(group["topic"], p["partition"], p["fetch_offset"], max(p["partition_max_bytes"], 0))
         for group in body["topics"] for p in group["partitions"]])
    return then(services.data.fetch(request),
                lambda results: _fetch_response(services, body, results))


def _fetch_response(services: KafkaServices, body: dict, results):
    """The Kafka answer; built in a worker thread when it converts more than
    ``OFF_LOOP_BYTES`` of records, so a large Fetch does not stall the loop's other
    connections (a Fetch changes nothing, so its order against other requests is moot, and
    the connection answers in request order anyway)."""
    if type(results) is RequestDenied:
        return {"error_code": results.error_code, "responses": []}
    total = sum(len(result[3]) for result in results)  # each one's records
    if total <= OFF_LOOP_BYTES:
        return _convert_fetch(services, body, results)
    return asyncio.to_thread(_convert_fetch, services, body, results)


def _convert_fetch(services: KafkaServices, body: dict, results) -> dict:
    each = iter(results)
    responses = []
    for group in body["topics"]:
        topic = group["topic"]
        out = []
        for entry in group["partitions"]:
            partition = entry["partition"]
            code, high_watermark, log_start_offset, records = next(each)
            code = int(code)
            if code == 0 and records:
                try:
                    kind = _TIMESTAMP_TYPE[services.timestamp_type(topic, partition)]
                    records = convert.tslog_batches_to_kafka(records, kind)
                except (BatchFormatError, ValueError) as exc:
                    log.error("fetch %s-%d: a stored batch cannot be converted: %s", topic,
                              partition, exc)
                    code, records = _CORRUPT, b""
            out.append({"partition_index": partition, "error_code": code,
                        "high_watermark": high_watermark,
                        "last_stable_offset": high_watermark,
                        "log_start_offset": log_start_offset,
                        "aborted_transactions": None if code == 0 else [],
                        "preferred_read_replica": -1, "records": records})
        responses.append({"topic": topic, "partitions": out})
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": responses}


# ------------------------------------------------------------------------------- list offsets


def list_offsets(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    return _after_produces(services, lambda: _list_offsets(services, body))


def _list_offsets(services: KafkaServices, body: dict):
    """Each partition searched by its topic's own ``message.timestamp.type`` (the service's
    ``timestamp_type`` None), as Kafka does."""
    request = ListOffsetsRequest(-1, None, [
        (group["name"], entry["partition_index"], entry["timestamp"])
        for group in body["topics"] for entry in group["partitions"]])
    return then(services.data.list_offsets(request),
                lambda results: _list_offsets_response(body, results))


def _list_offsets_response(body: dict, results: list) -> dict:
    each = iter(results)
    return {"throttle_time_ms": 0, "topics": [{"name": group["name"], "partitions": [
        {"partition_index": entry["partition_index"], "error_code": int(found[0]),
         "timestamp": found[2], "offset": found[1], "leader_epoch": found[3]}
        for entry, found in zip(group["partitions"], each)]} for group in body["topics"]]}


DATA_ADAPTERS = {
    ApiKey.PRODUCE: produce,
    ApiKey.FETCH: fetch,
    ApiKey.LIST_OFFSETS: list_offsets,
}
