"""Handlers of the data path: Produce, Fetch, ListOffsets.

Each takes ``(broker, body)`` and returns the response body, or an awaitable of it when the
answer must wait (a durable ack, a long poll), or None for Produce with acks = 0. The fast
path stays synchronous: no task is created for an acks = 1 produce or a fetch that has data.

Per batch the work is constant: a produce splits ``records`` on the header length fields and
hands each batch to ``PartitionLog.append`` (header checks, CRC, stamp); a fetch returns
``PartitionLog.read``'s bytes as they are. Records are never decoded here.
"""

from __future__ import annotations

import asyncio
import logging
import time

from tslog.protocol.batch_header import (
    BatchFormatError,
    newest_create_time,
    validate_batch_for_stamping,
)
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from tslog.protocol.records import split_batches

from ..metrics.observe import observe_fetch, observe_lookup, observe_produce
from ..storage import (
    CorruptRecordError,
    InvalidTimestampError,
    LogClosedError,
    OffsetOutOfRangeError,
    PartitionLog,
    RecordTooLargeError,
)
from .state import Broker, BrokerClock

log = logging.getLogger("tslog.broker.handlers")

_CODES = {
    CorruptRecordError: ErrorCode.CORRUPT_MESSAGE,
    InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    OffsetOutOfRangeError: ErrorCode.OFFSET_OUT_OF_RANGE,
    LogClosedError: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # deleted while the request ran
}


# Codes a healthy client meets in normal operation (stale metadata, a consumer at the end).
_ROUTINE = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OFFSET_OUT_OF_RANGE})


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


# ------------------------------------------------------------------------------------ produce


def _precheck(plog: PartitionLog, batch, now_ms: int) -> tuple:
    """The checks ``append`` makes, done for every batch before the first is written, so a
    bad batch later in a request cannot leave its predecessors behind. Returns what
    ``append(validated=...)`` takes, so the records are read once."""
    config = plog.config
    if len(batch) > config.max_message_bytes or len(batch) > config.segment_bytes:
        raise RecordTooLargeError(f"batch of {len(batch)} bytes is too large")
    try:
        validated = validate_batch_for_stamping(batch)
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
    header = validated[0]
    problem = config.create_time_problem(header.min_create_time, header.max_create_time, now_ms)
    if problem:
        raise InvalidTimestampError(problem)
    return validated


def append_records(plog: PartitionLog, records: bytes, clock: BrokerClock) -> tuple[int, int]:
    """Append every batch in ``records``, all or nothing; return (first offset, LAT).

    Raises:
        StorageError subclasses (nothing written), OSError (rolled back if possible).
    """
    try:
        batches = split_batches(records)
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
    if not batches:
        raise CorruptRecordError("records holds no batch")
    with clock.frozen() as now_ms:
        if len(batches) == 1:
            info = plog.append(records)
            return info.base_offset, info.log_append_time
        checked = [_precheck(plog, batch, now_ms) for batch in batches]
        start = plog.log_end_offset
        try:
            first = last = plog.append(batches[0], validated=checked[0])
            for batch, validated in zip(batches[1:], checked[1:]):
                last = plog.append(batch, validated=validated)
        except BaseException:
            if plog.log_end_offset != start:  # only an I/O failure can get here
                plog.truncate_to(start)
            raise
        return first.base_offset, last.log_append_time


def handle_produce(broker: Broker, body: dict):
    acks = body["acks"]
    durable: list[PartitionLog] = []
    topics_out = []
    for group in body["topics"]:
        topic = group["topic"]
        parts_out = []
        for entry in group["partitions"]:
            partition = entry["partition"]
            plog = broker.topics.get_log(topic, partition)
            result = {"partition": partition, "error_code": 0, "base_offset": -1,
                      "log_append_time": -1, "log_start_offset": -1}
            if plog is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                log.info("produce %s-%d refused: no such topic-partition", topic, partition)
            else:
                try:
                    records = entry["records"]
                    result["base_offset"], result["log_append_time"] = append_records(
                        plog, records, broker.clock)
                    broker.notifier.notify(plog)
                    observe_produce(topic, plog.log_end_offset - result["base_offset"],
                                    len(records), result["log_append_time"],
                                    newest_create_time(records))
                    if acks == -1:
                        durable.append(plog)
                        result["_log"] = plog
                except Exception as exc:  # noqa: BLE001 - every failure becomes a code
                    result["error_code"] = error_code_for(exc, f"produce {topic}-{partition}")
                result["log_start_offset"] = plog.log_start_offset
            parts_out.append(result)
        topics_out.append({"topic": topic, "partitions": parts_out})
    response = {"topics": topics_out}
    if acks == 0:
        return None
    if durable:
        return _after_fsync(broker, response, durable, body["timeout_ms"])
    return response


async def _after_fsync(broker: Broker, response: dict, logs: list[PartitionLog],
                       timeout_ms: int) -> dict:
    """Answer an acks = -1 produce once its logs are fsynced (or time out trying)."""
    timeout_ms = min(timeout_ms or broker.config.request_timeout_ms,
                     broker.config.request_timeout_ms)
    waiting = asyncio.ensure_future(broker.committer.wait_durable(logs))
    try:
        failed = await asyncio.wait_for(asyncio.shield(waiting), timeout_ms / 1000)
        timed_out = False
    except TimeoutError:
        failed, timed_out = {}, True
    for group in response["topics"]:
        for result in group["partitions"]:
            plog = result.pop("_log", None)
            if plog is None:
                continue
            if timed_out:
                result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            elif plog in failed:
                result["error_code"] = error_code_for(failed[plog], f"flush {plog.directory.name}")
    return response


# -------------------------------------------------------------------------------------- fetch


def _fetch_plan(broker: Broker, body: dict) -> list:
    return [(group["topic"], [(p, broker.topics.get_log(group["topic"], p["partition"]))
                              for p in group["partitions"]])
            for group in body["topics"]]


def _read_plan(broker: Broker, body: dict, plan: list) -> tuple[dict, int, bool]:
    """One pass over the requested partitions: (response, record bytes, any error)."""
    budget = min(body["max_bytes"], broker.config.fetch_max_bytes)
    total = 0
    errors = False
    topics_out = []
    for topic, parts in plan:
        parts_out = []
        for entry, plog in parts:
            result = {"partition": entry["partition"], "error_code": 0, "high_watermark": -1,
                      "log_start_offset": -1, "records": b""}
            if plog is None:
                result["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                errors = True
            else:
                try:
                    result["high_watermark"] = high_watermark = plog.log_end_offset
                    result["log_start_offset"] = plog.log_start_offset
                    limit = min(entry["max_bytes"], budget - total)
                    if limit > 0 or total == 0:  # the first data is sent even if oversized
                        result["records"] = records = plog.read(
                            entry["fetch_offset"], max(limit, 1), high_watermark)
                        total += len(records)
                except Exception as exc:  # noqa: BLE001 - every failure becomes a code
                    result["error_code"] = error_code_for(exc, f"fetch {topic}-{entry['partition']}")
                    errors = True
            parts_out.append(result)
        topics_out.append({"topic": topic, "partitions": parts_out})
    return {"topics": topics_out}, total, errors


def handle_fetch(broker: Broker, body: dict):
    plan = _fetch_plan(broker, body)
    response, total, errors = _read_plan(broker, body, plan)
    if total >= body["min_bytes"] or errors or body["max_wait_ms"] == 0:
        if total and body["replica_id"] < 0:  # consumers' reads, not followers'
            observe_fetch(response)
        return response
    return _long_poll(broker, body, plan)


async def _long_poll(broker: Broker, body: dict, plan: list) -> dict:
    """Wait until ``min_bytes`` are available or ``max_wait_ms`` passes; woken by appends."""
    loop = asyncio.get_running_loop()
    wait_ms = min(body["max_wait_ms"], broker.config.request_timeout_ms)
    deadline = loop.time() + wait_ms / 1000
    logs = [plog for _, parts in plan for _, plog in parts if plog is not None]
    while True:
        woken = loop.create_future()
        broker.notifier.register(logs, woken)
        try:
            response, total, errors = _read_plan(broker, body, plan)
            remaining = deadline - loop.time()
            if total >= body["min_bytes"] or errors or remaining <= 0 or broker.stopping:
                if total and body["replica_id"] < 0:
                    observe_fetch(response)
                return response
            try:
                await asyncio.wait_for(woken, remaining)
            except TimeoutError:
                pass
        finally:
            broker.notifier.unregister(logs, woken)


# ------------------------------------------------------------------------------- list offsets


def _list_one(plog: PartitionLog, timestamp: int, timestamp_type: str) -> tuple[int, int, int]:
    """(error code, offset, timestamp) for one partition."""
    if timestamp == LATEST_TIMESTAMP:
        return 0, plog.log_end_offset, -1  # the high watermark, single-node
    if timestamp < 0 and timestamp not in (EARLIEST_TIMESTAMP, MAX_TIMESTAMP):
        return ErrorCode.INVALID_REQUEST, -1, -1
    scanned = plog.lookup_bytes_read
    started = time.perf_counter()
    found = plog.offset_for_time(timestamp, timestamp_type)
    observe_lookup(time.perf_counter() - started, plog.lookup_bytes_read - scanned)
    if found is None:
        return 0, -1, -1
    return 0, found.offset, found.timestamp


def handle_list_offsets(broker: Broker, body: dict) -> dict:
    timestamp_type = body["timestamp_type"]
    topics_out = []
    for group in body["topics"]:
        topic = group["topic"]
        parts_out = []
        for entry in group["partitions"]:
            partition = entry["partition"]
            plog = broker.topics.get_log(topic, partition)
            if plog is None:
                code, offset, timestamp = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
            else:
                try:
                    code, offset, timestamp = _list_one(plog, entry["timestamp"], timestamp_type)
                except Exception as exc:  # noqa: BLE001
                    code = error_code_for(exc, f"list offsets {topic}-{partition}")
                    offset = timestamp = -1
            parts_out.append({"partition": partition, "error_code": code, "offset": offset,
                              "timestamp": timestamp})
        topics_out.append({"topic": topic, "partitions": parts_out})
    return {"topics": topics_out}
