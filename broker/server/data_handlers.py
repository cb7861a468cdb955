"""Handlers of the data path: Produce, Fetch, ListOffsets.

Each takes ``(services, body)``, the services being the ``DataPath`` set of ``services.py``
(the hosted partitions and their replication state, the clock, the notifier, group commit,
the request limits), and returns the response body, or an awaitable of it when the
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
from dataclasses import dataclass

from tslog.protocol.batch_header import (
    BatchFormatError,
    newest_create_time,
    validate_batch_for_stamping,
)
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from tslog.protocol.records import split_batches

from ..metrics.observe import observe_fetch, observe_lookups, observe_produce
from ..replication.partition import LEADER, NotLeaderError, Partition
from ..storage import CorruptRecordError, InvalidTimestampError, PartitionLog, RecordTooLargeError
from .clock import BrokerClock
from .error_codes import IdempotentBatchesError, error_code_for
from .services import DataPath, missing_code

log = logging.getLogger("tslog.broker.handlers")


# ------------------------------------------------------------------------------------ produce


@dataclass(frozen=True, slots=True)
class SentSize:
    """A produced partition's one idempotent batch as its producer sent it, before a front
    door converted it (the Kafka listener: a tslog batch takes more room than the Kafka
    batch it comes from). ``max.message.bytes`` is counted against ``sent_bytes``, as Kafka
    counts it, so a batch Kafka would take is taken; ``segment.bytes`` still bounds what
    is stored. A type of its own, not a number in the body: native bodies are decoded
    from msgpack, which never makes one, so only the broker's own adapter can say it."""

    sent_bytes: int


def _precheck(plog: PartitionLog, batch, now_ms: int, sent: SentSize | None = None) -> tuple:
    """The checks ``append`` makes, done for every batch before the first is written, so a
    bad batch later in a request cannot leave its predecessors behind. Returns what
    ``append(validated=...)`` takes, so the records are read once."""
    config = plog.config
    problem = config.size_problem(len(batch)) if sent is None else \
        config.size_problem(sent.sent_bytes, stored=len(batch))
    if problem is not None:
        raise RecordTooLargeError(problem)
    try:
        validated = validate_batch_for_stamping(batch)
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
    header = validated[0]
    problem = config.create_time_problem(header.min_create_time, header.max_create_time, now_ms)
    if problem:
        raise InvalidTimestampError(problem)
    return validated


def append_records(part: Partition, records: bytes, clock: BrokerClock,
                   sent: SentSize | None = None) -> tuple[int, int, int]:
    """Append every batch in ``records``, all or nothing; return (first offset, LAT, end
    offset). A retried idempotent batch already in the log answers its original offsets
    without being written again. ``sent``: the size of ``records``' one idempotent batch
    as its producer sent it (``SentSize``), when a front door converted it.

    Raises:
        StorageError subclasses, OutOfOrderSequenceError, InvalidProducerEpochError (nothing
        written), OSError (rolled back if possible).
    """
    try:
        batches = split_batches(records)
    except BatchFormatError as exc:
        raise CorruptRecordError(str(exc)) from None
    if not batches:
        raise CorruptRecordError("records holds no batch")
    replica, plog, epoch = part.replica, part.log, part.leader_epoch
    with clock.frozen() as now_ms:
        if len(batches) == 1:
            validated = _precheck(plog, records, now_ms, sent)  # the one parse of its header
            header = validated[0]
            if header.producer_id >= 0:
                duplicate = replica.producers.check(header)
                if duplicate is not None:
                    return duplicate[0], duplicate[1], duplicate[0] + header.record_count
            info = replica.append_as_leader(records, epoch, validated)
            return info.base_offset, info.log_append_time, info.last_offset + 1
        checked = [_precheck(plog, batch, now_ms) for batch in batches]
        if any(validated[0].producer_id >= 0 for validated in checked):
            raise IdempotentBatchesError("an idempotent batch must be alone in its partition")
        start = plog.log_end_offset
        try:
            first = last = replica.append_as_leader(batches[0], epoch, checked[0])
            for batch, validated in zip(batches[1:], checked[1:]):
                last = replica.append_as_leader(batch, epoch, validated)
        except BaseException:
            if plog.log_end_offset != start:  # only an I/O failure can get here
                replica.truncate_to(start)
            raise
        return first.base_offset, last.log_append_time, last.last_offset + 1


def _refusal(services: DataPath, topic: str, partition: int, part: Partition | None,
             acks: int) -> ErrorCode | None:
    """Why this broker must not take a produce for ``part`` now, or None."""
    if part is None:
        return missing_code(services.topics, topic, partition)
    if part.role != LEADER or not services.replicas.may_acknowledge():
        return ErrorCode.NOT_LEADER_OR_FOLLOWER  # deposed, or our lease may have expired
    if acks == -1 and len(part.isr) < part.log.config.min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return None


def handle_produce(services: DataPath, body: dict):
    acks = body["acks"]
    durable: list[PartitionLog] = []
    replicated = False
    topics_out = []
    for group in body["topics"]:
        topic = group["topic"]
        parts_out = []
        for entry in group["partitions"]:
            partition = entry["partition"]
            part = services.replicas.get(topic, partition)
            result = {"partition": partition, "error_code": 0, "base_offset": -1,
                      "log_append_time": -1, "log_start_offset": -1}
            refusal = _refusal(services, topic, partition, part, acks)
            if refusal is not None:
                result["error_code"] = refusal
                log.info("produce %s-%d refused: %s", topic, partition, refusal.name)
            else:
                plog = part.log
                try:
                    records, sent = entry["records"], entry.get("sent")
                    result["base_offset"], result["log_append_time"], end = append_records(
                        part, records, services.clock,
                        sent if isinstance(sent, SentSize) else None)
                    services.notifier.notify(part)  # followers' long polls
                    if part.alone:  # consumers wait for the HW, which is the log end here
                        services.notifier.notify(plog)
                    observe_produce(topic, plog.log_end_offset - result["base_offset"],
                                    len(records), result["log_append_time"],
                                    newest_create_time(records))
                    if acks == -1:
                        if part.alone:  # the only copy: acknowledged once it is on disk
                            durable.append(plog)
                            result["_log"] = plog
                        else:  # acknowledged once every in-sync replica holds it
                            result["_wait"] = (part, end)
                            replicated = True
                except Exception as exc:  # noqa: BLE001 - every failure becomes a code
                    result["error_code"] = error_code_for(exc, f"produce {topic}-{partition}")
                    if isinstance(exc, RecordTooLargeError):  # which limit, for the user
                        result["error_message"] = str(exc)
                result["log_start_offset"] = plog.log_start_offset
            parts_out.append(result)
        topics_out.append({"topic": topic, "partitions": parts_out})
    response = {"topics": topics_out}
    if acks == 0:
        return None
    if durable or replicated:
        return _acknowledge_all(services, response, durable, body["timeout_ms"])
    return response


async def _acknowledge_all(services: DataPath, response: dict, logs: list[PartitionLog],
                           timeout_ms: int) -> dict:
    """Answer an acks = -1 produce once each batch survives the loss of any one broker
    (or time out trying).

    A leader alone in its ISR holds the only copy, so the batch must be on its disk: the
    group-commit fsync. With followers in the ISR, the batch is safe once every in-sync
    replica holds it, i.e. once the high watermark has passed it. As in Kafka, that waits
    for no fsync (``flush.messages``/``flush.ms`` ask for those): waiting for both made
    every acks=all produce pay a disk round trip on top of the followers' (measured when this
    was chosen; no bench in bench/ prints that comparison).
    """
    timeout_ms = min(timeout_ms or services.config.request_timeout_ms,
                     services.config.request_timeout_ms)
    deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
    failed, timed_out = {}, False
    if logs:
        # asyncio.timeout_at, not wait_for: no task or extra future per wait on this hot path.
        try:
            async with asyncio.timeout_at(deadline):
                failed = await services.committer.durable(logs)
        except TimeoutError:
            timed_out = True
    for group in response["topics"]:
        for result in group["partitions"]:
            plog = result.pop("_log", None)
            wait = result.pop("_wait", None)
            if wait is not None:
                result["error_code"] = await _until_committed(services, *wait, deadline)
            elif plog is None:
                continue
            elif not services.replicas.may_acknowledge():
                result["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif timed_out:
                result["error_code"] = ErrorCode.REQUEST_TIMED_OUT
            elif plog in failed:
                result["error_code"] = error_code_for(failed[plog], f"flush {plog.directory.name}")
    return response


async def _until_committed(services: DataPath, part: Partition, end_offset: int,
                           deadline: float) -> int:
    """Wait until the HW reaches ``end_offset`` (by the loop's clock ``deadline``): 0,
    REQUEST_TIMED_OUT, NOT_LEADER or a flush's error code.

    The HW also passes a batch when its followers leave the ISR instead of copying it: the
    leader then holds the only copy, which must be fsynced before the answer, as if the
    leader had been alone from the start."""
    try:
        async with asyncio.timeout_at(deadline):
            await part.wait_for_high_watermark(end_offset)
            if part.alone:
                plog = part.log
                failed = await services.committer.durable([plog])
                if plog in failed:
                    return error_code_for(failed[plog], f"flush {plog.directory.name}")
        if not services.replicas.may_acknowledge():
            return ErrorCode.NOT_LEADER_OR_FOLLOWER  # committed or not: a retry settles it
        return 0
    except TimeoutError:
        return ErrorCode.REQUEST_TIMED_OUT
    except NotLeaderError:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER


# -------------------------------------------------------------------------------------- fetch


def _fetch_plan(services: DataPath, body: dict) -> list:
    """[(topic, [(entry, partition or None)])]; a follower's fetch offsets are recorded once
    here (they are its log end offsets, which move the leader's high watermark)."""
    replicas = services.replicas
    plan = [(group["topic"], [(p, replicas.get(group["topic"], p["partition"]))
                              for p in group["partitions"]])
            for group in body["topics"]]
    replica_id = body["replica_id"]
    if replica_id >= 0:
        for _, parts in plan:
            for entry, part in parts:
                if part is not None and part.role == LEADER:
                    replicas.follower_fetched(part, replica_id, entry["fetch_offset"])
    return plan


def _read_plan(services: DataPath, body: dict, plan: list) -> tuple[dict, int, bool]:
    """One pass over the requested partitions: (response, record bytes, any error).

    Consumers read below the high watermark; followers (replica_id >= 0) up to the log end.
    """
    budget = min(body["max_bytes"], services.config.fetch_max_bytes)
    replica_id = body["replica_id"]
    follower = replica_id >= 0
    total = 0
    errors = False
    topics_out = []
    for topic, parts in plan:
        parts_out = []
        for entry, part in parts:
            result = {"partition": entry["partition"], "error_code": 0, "high_watermark": -1,
                      "log_start_offset": -1, "records": b""}
            if part is None:
                result["error_code"] = missing_code(services.topics, topic, entry["partition"])
                errors = True
            elif part.role != LEADER:
                result["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                errors = True
            else:
                plog = part.log
                try:
                    result["high_watermark"] = high_watermark = part.high_watermark
                    result["log_start_offset"] = plog.log_start_offset
                    limit = min(entry["max_bytes"], budget - total)
                    if follower and replica_id in part.state.adding \
                            and replica_id not in part.isr:
                        result["records"] = records = _catch_up_read(
                            services.replicas.throttle, plog, entry["fetch_offset"],
                            limit, total)
                        total += len(records)
                    elif limit > 0 or total == 0:  # the first data is sent even if oversized
                        result["records"] = records = plog.read(
                            entry["fetch_offset"], max(limit, 1),
                            None if follower else high_watermark)
                        total += len(records)
                except Exception as exc:  # noqa: BLE001 - every failure becomes a code
                    result["error_code"] = error_code_for(exc, f"fetch {topic}-{entry['partition']}")
                    errors = True
            parts_out.append(result)
        topics_out.append({"topic": topic, "partitions": parts_out})
    return {"topics": topics_out}, total, errors


def _catch_up_read(throttle, plog, fetch_offset: int, limit: int, total: int) -> bytes:
    """A read for a replica a reassignment is adding, within the catch-up throttle
    (``replication/throttle.py``): nothing while it is over its quota."""
    allowance = throttle.allowance()
    if allowance == 0 or (limit <= 0 and total > 0):
        return b""
    if allowance > 0:
        limit = min(limit, allowance)
    records = plog.read(fetch_offset, max(limit, 1), None)
    throttle.spent(len(records))
    return records


def handle_fetch(services: DataPath, body: dict):
    plan = _fetch_plan(services, body)
    response, total, errors = _read_plan(services, body, plan)
    if total >= body["min_bytes"] or errors or body["max_wait_ms"] == 0:
        if total and body["replica_id"] < 0:  # consumers' reads, not followers'
            observe_fetch(response)
        return response
    return _long_poll(services, body, plan)


async def _long_poll(services: DataPath, body: dict, plan: list) -> dict:
    """Wait until ``min_bytes`` are available or ``max_wait_ms`` passes; woken by appends."""
    loop = asyncio.get_running_loop()
    wait_ms = min(body["max_wait_ms"], services.config.request_timeout_ms)
    deadline = loop.time() + wait_ms / 1000
    # Consumers wake when the high watermark moves (on plog), followers on appends (on the
    # partition): a follower is not woken just to hear a new HW, a consumer not for data
    # it may not read yet.
    follower = body["replica_id"] >= 0
    logs = [part if follower else part.log
            for _, parts in plan for _, part in parts if part is not None]
    while True:
        woken = loop.create_future()
        services.notifier.register(logs, woken)
        try:
            response, total, errors = _read_plan(services, body, plan)
            remaining = deadline - loop.time()
            if (total >= body["min_bytes"] or errors or remaining <= 0
                    or services.lifecycle.stopping):
                if total and body["replica_id"] < 0:
                    observe_fetch(response)
                return response
            try:
                async with asyncio.timeout(remaining):
                    await woken
            except TimeoutError:
                pass
        finally:
            services.notifier.unregister(logs, woken)


# ------------------------------------------------------------------------------- list offsets


def _list_special(part: Partition, timestamp: int, limit: int) -> tuple[int, int, int]:
    """(error code, offset, timestamp) for LATEST, EARLIEST or an invalid negative time."""
    if timestamp == LATEST_TIMESTAMP:
        return 0, limit, -1
    if timestamp == EARLIEST_TIMESTAMP:
        return 0, part.log.log_start_offset, -1
    return ErrorCode.INVALID_REQUEST, -1, -1


class _Lookups:
    """One ListOffsets' lookups by time, counted for the metrics once per request: the
    partitions' count and the log bytes they read, summed as the loop goes."""

    __slots__ = ("count", "scanned")

    def __init__(self) -> None:
        self.count = 0
        self.scanned = 0


def _list_partitions(services: DataPath, topic: str, entries: list, timestamp_type: str,
                     replica_id: int, lookups: _Lookups) -> list[dict]:
    """One topic's partitions. Consumers see only what is below the high watermark (an
    uncommitted match answers "none", as Kafka does); replicas see the log end.

    The per-partition work is the log's own lookup and a few attribute reads: the
    partition's state and the limit are read once each, and nothing is timed or observed
    here (``handle_list_offsets`` does that once for the request)."""
    get = services.replicas.get
    out = []
    for entry in entries:
        partition, timestamp = entry["partition"], entry["timestamp"]
        part = get(topic, partition)
        code = offset = found_time = -1
        if part is None:
            code = missing_code(services.topics, topic, partition)
        elif part.role != LEADER:
            code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        else:
            plog = part.log
            try:
                limit = plog.log_end_offset if replica_id >= 0 else part.high_watermark
                if timestamp >= 0 or timestamp == MAX_TIMESTAMP:
                    scanned = plog.lookup_bytes_read
                    found = plog.offset_for_time(timestamp, timestamp_type)
                    lookups.count += 1
                    lookups.scanned += plog.lookup_bytes_read - scanned
                    code = 0
                    if found is not None and found.offset < limit:
                        offset, found_time = found
                else:
                    code, offset, found_time = _list_special(part, timestamp, limit)
            except Exception as exc:  # noqa: BLE001
                code = error_code_for(exc, f"list offsets {topic}-{partition}")
                offset = found_time = -1
        out.append({"partition": partition, "error_code": code, "offset": offset,
                    "timestamp": found_time})
    return out


def handle_list_offsets(services: DataPath, body: dict) -> dict:
    timestamp_type = body["timestamp_type"]
    replica_id = body["replica_id"]
    lookups = _Lookups()
    started = time.perf_counter()
    topics_out = [{"topic": group["topic"], "partitions": _list_partitions(
        services, group["topic"], group["partitions"], timestamp_type, replica_id, lookups)}
        for group in body["topics"]]
    if lookups.count:
        observe_lookups(lookups.count, time.perf_counter() - started, lookups.scanned)
    return {"topics": topics_out}
