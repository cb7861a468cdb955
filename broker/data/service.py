"""The data service: produce, fetch, list offsets and metadata, for both front doors.

Each method takes a typed request (``requests.py``) and returns the results in the request's
order, or an awaitable of them when the answer must wait (a durable ack, a long poll), or
None for a produce with acks = 0. The fast path stays synchronous: no task is created for
an acks = 1 produce or a fetch that has data, nor for an acks = -1 produce on a single
broker, whose awaitable is a ``Pending`` (``pending.py``) the group commit settles.

``denied``: the topics the request gate (``security/request_gate.py``) refused for this
principal. Their partitions are answered TOPIC_AUTHORIZATION_FAILED and nothing else is
done for them; they do not cut a long poll short (Kafka answers them beside the rest).

Per batch the work is constant: a produce hands a partition's ``records`` to its
``ReplicaLog.append_as_leader`` (storage's append rules: checks, idempotence, offsets, all
or nothing); a fetch returns ``PartitionLog.read``'s bytes as they are. Records are never
decoded here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Protocol

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP

from ..cluster.view import ClusterView
from ..config import BrokerConfig
from ..metrics.observe import observe_fetched, observe_lookups, observe_produce
from ..replication.manager import ReplicaManager
from ..replication.partition import LEADER, NotLeaderError, Partition
from ..storage import PartitionLog, RecordTooLargeError
from ..topics import TopicManager
from .error_codes import TOPIC_DENIED, error_code_for, missing_code
from .metadata import metadata
from .partition_lists import PartitionLists
from .pending import Pending
from .requests import (
    Appended,
    FetchRequest,
    Fetched,
    FoundOffset,
    ListOffsetsRequest,
    Metadata,
    MetadataRequest,
    ProduceRequest,
)
from .waking import DormantWaits

log = logging.getLogger("tslog.broker.handlers")

NOTHING_DENIED: frozenset[str] = frozenset()
_INDEX = {"LogAppendTime": "append", "CreateTime": "create"}  # message.timestamp.type


class DataPath(Protocol):
    """What the service reads: the hosted partitions and their replication state, the topic
    catalog (to tell "not here" from "no such partition"), the notifier that wakes long
    polls, group commit (durable acks), the request limits and the broker's ``Lifecycle``
    (its ``stopping`` flag ends long polls). ``server/services.DataPathServices`` is one."""

    topics: TopicManager
    replicas: ReplicaManager
    notifier: object
    committer: object
    config: BrokerConfig
    lifecycle: object


# ------------------------------------------------------------------------------------ produce


def _refusal(path: DataPath, topic: str, partition: int, part: Partition | None,
             acks: int, denied: frozenset) -> int | None:
    """Why this broker must not take a produce for ``part`` now, or None."""
    if topic in denied:
        return TOPIC_DENIED
    if part is None:
        return missing_code(path.topics, topic, partition)
    if part.role != LEADER or not path.replicas.may_acknowledge():
        return ErrorCode.NOT_LEADER_OR_FOLLOWER  # deposed, or our lease may have expired
    if acks == -1 and len(part.isr) < part.log.config.min_insync_replicas:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return None


def produce(service: DataService, request: ProduceRequest,
            denied: frozenset = NOTHING_DENIED, woken: bool = False):
    """Append each partition's batches (``ReplicaLog.append_as_leader``) and answer: now
    for acks 1, nothing for acks 0, and for acks -1 an awaitable of the results that waits
    for what each partition needs: a ``Pending`` when every leader is alone in its ISR
    (``_acknowledge_when_synced``), else a coroutine (``_acknowledge_all``). A request
    naming a dormant log (or a partition an earlier such request holds) appends in its
    turn, once the logs are open (``waking.DormantWaits``; ``woken``: that turn came)."""
    path = service.path
    acks = request.acks
    if not woken:
        dormant = path.replicas.dormant_or_held(request.partitions, denied)
        if dormant is not None:
            keys = [(topic, partition) for topic, partition, _ in request.partitions
                    if topic not in denied]
            return service.waits.defer_produce(
                path.replicas, keys, dormant, lambda: produce(service, request, denied, True),
                answered=acks != 0)
    durable: list[tuple[Appended, PartitionLog]] = []  # to fsync before answering
    replicated: list[tuple[Appended, Partition, int]] = []  # (result, partition, end offset)
    results = []
    get = path.replicas.get
    for topic, partition, records in request.partitions:
        part = get(topic, partition)
        refusal = _refusal(path, topic, partition, part, acks, denied)
        if refusal is not None:
            results.append(Appended(refusal))
            log.info("produce %s-%d refused: %s", topic, partition, ErrorCode(refusal).name)
            continue
        result = Appended()
        results.append(result)
        end = _append(path, topic, partition, part, records, result)
        if end is not None and acks == -1:
            if part.alone:  # the only copy: acknowledged once it is on disk
                durable.append((result, part.log))
            else:  # acknowledged once every in-sync replica holds it
                replicated.append((result, part, end))
    if acks == 0:
        return None
    if replicated:
        return _acknowledge_all(path, results, durable, replicated, request.timeout_ms)
    if durable:
        return _acknowledge_when_synced(path, results, durable, request.timeout_ms)
    return results


def _append(path: DataPath, topic: str, partition: int, part: Partition, records,
            result: Appended) -> int | None:
    """Append one partition's ``records`` as its leader and fill ``result``; return the end
    offset the acknowledgement waits for, or None when the append was refused."""
    plog = part.log
    try:
        info = part.replica.append_as_leader(records, part.leader_epoch)
        result.base_offset = info.base_offset
        result.log_append_time = info.log_append_time
        path.notifier.notify(part)  # followers' long polls
        if part.alone:  # consumers wait for the HW, which is the log end here
            path.notifier.notify(plog)
        observe_produce(topic, plog.log_end_offset - info.base_offset, info.batch_bytes,
                        info.log_append_time, info.max_create_time)
        return info.last_offset + 1
    except Exception as exc:  # noqa: BLE001 - every failure becomes a code
        result.error_code = error_code_for(exc, f"produce {topic}-{partition}")
        if isinstance(exc, RecordTooLargeError):  # which limit, for the user
            result.error_message = str(exc)
        return None
    finally:
        result.log_start_offset = plog.log_start_offset


def _acknowledge_when_synced(path: DataPath, results: list[Appended],
                             durable: list[tuple[Appended, PartitionLog]],
                             timeout_ms: int) -> Pending:
    """The results of an acks = -1 produce whose every partition's leader is alone in
    its ISR (the only copy: acknowledged once fsynced), as a ``Pending`` that the group
    commit's round settles, or the request's timeout (one timer) does first.

    No coroutine, task or timeout context: this is every single-broker acks=all produce,
    and the answer is built in the call that settles it (``pending.py``)."""
    loop = asyncio.get_running_loop()
    answer = Pending()
    synced = path.committer.durable([plog for _, plog in durable])
    timer = loop.call_later(_timeout_s(path, timeout_ms), _settle_synced, path, answer,
                            results, durable, None)
    synced.add_callback(lambda source: _settle_synced(path, answer, results, durable, source,
                                                      timer))
    return answer


def _settle_synced(path: DataPath, answer: Pending, results: list[Appended],
                   durable: list, synced: Pending | None, timer=None) -> None:
    """Set the durable partitions' codes and settle ``answer``: from the round
    (``synced``) or, with ``synced`` None, at the timeout."""
    if answer.done:  # timed out before the round came
        return
    if timer is not None:
        timer.cancel()
    failed = {}
    if synced is not None:
        try:
            failed = synced.result()
        except Exception as exc:  # noqa: BLE001 - the group commit stopped (shutdown)
            answer.fail(exc)
            return
    _durable_codes(path, durable, failed, timed_out=synced is None)
    answer.settle(results)


def _durable_codes(path: DataPath, durable: list, failed: dict, timed_out: bool) -> None:
    for result, plog in durable:
        if not path.replicas.may_acknowledge():
            result.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        elif timed_out:
            result.error_code = ErrorCode.REQUEST_TIMED_OUT
        elif plog in failed:
            result.error_code = error_code_for(failed[plog], f"flush {plog.directory.name}")


def _timeout_s(path: DataPath, timeout_ms: int) -> float:
    """A produce's own timeout, within the broker's ``request_timeout_ms``."""
    return min(timeout_ms or path.config.request_timeout_ms,
               path.config.request_timeout_ms) / 1000


async def _acknowledge_all(path: DataPath, results: list[Appended],
                           durable: list[tuple[Appended, PartitionLog]],
                           replicated: list[tuple[Appended, Partition, int]],
                           timeout_ms: int) -> list[Appended]:
    """The results of an acks = -1 produce once each batch survives the loss of any one
    broker (or time out trying), their error codes set in place.

    A leader alone in its ISR holds the only copy (``durable``), so the batch must be on
    its disk: the group-commit fsync. With followers in the ISR (``replicated``), the batch
    is safe once every in-sync replica holds it, i.e. once the high watermark has passed
    it. As in Kafka, that waits for no fsync (``flush.messages``/``flush.ms`` ask for
    those): waiting for both made every acks=all produce pay a disk round trip on top of
    the followers'.
    """
    deadline = asyncio.get_running_loop().time() + _timeout_s(path, timeout_ms)
    failed, timed_out = {}, False
    if durable:
        synced = path.committer.durable([plog for _, plog in durable])
        try:
            async with asyncio.timeout_at(deadline):
                failed = await synced
        except TimeoutError:
            timed_out = True
    _durable_codes(path, durable, failed, timed_out)
    for result, part, end in replicated:
        result.error_code = await _until_committed(path, part, end, deadline)
    return results


async def _until_committed(path: DataPath, part: Partition, end_offset: int,
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
                failed = await path.committer.durable([plog])
                if plog in failed:
                    return error_code_for(failed[plog], f"flush {plog.directory.name}")
        if not path.replicas.may_acknowledge():
            return ErrorCode.NOT_LEADER_OR_FOLLOWER  # committed or not: a retry settles it
        return 0
    except TimeoutError:
        return ErrorCode.REQUEST_TIMED_OUT
    except NotLeaderError:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER


# -------------------------------------------------------------------------------------- fetch

_DENIED_READ = (TOPIC_DENIED, -1, -1, b"")  # a Fetched


def _fetch_plan(path: DataPath, request: FetchRequest, denied: frozenset) -> list:
    """The partitions (None: not here, or denied); a follower's fetch offsets are recorded
    once here (they are its log end offsets, which move the leader's high watermark)."""
    get = path.replicas.get
    plan = []  # a loop, not a comprehension: one call fewer per request
    for topic, partition, _, _ in request.partitions:
        plan.append(None if topic in denied else get(topic, partition))
    replica_id = request.replica_id
    if replica_id >= 0:
        for entry, part in zip(request.partitions, plan):
            if part is not None and part.role == LEADER:
                path.replicas.follower_fetched(part, replica_id, entry[2])  # its fetch offset
    return plan


def _read_plan(path: DataPath, request: FetchRequest, plan: list, denied: frozenset
               ) -> tuple[list[Fetched], int, bool]:
    """One pass over the requested partitions: (results, record bytes, any error).

    Consumers read below the high watermark; followers (replica_id >= 0) up to the log end.
    """
    budget = min(request.max_bytes, path.config.fetch_max_bytes)
    replica_id = request.replica_id
    follower = replica_id >= 0
    total = 0
    errors = False
    results = []
    for entry, part in zip(request.partitions, plan):
        topic, partition, fetch_offset, max_bytes = entry
        if part is None:
            if topic in denied:
                results.append(_DENIED_READ)
                continue
            results.append((missing_code(path.topics, topic, partition), -1, -1, b""))
            errors = True
        elif part.role != LEADER:
            results.append((ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, b""))
            errors = True
        else:
            plog = part.log
            try:
                high_watermark = part.high_watermark
                records = b""
                limit = min(max_bytes, budget - total)
                if follower and replica_id in part.state.adding and replica_id not in part.isr:
                    records = _catch_up_read(path.replicas.throttle, plog, fetch_offset,
                                             limit, total)
                elif limit > 0 or total == 0:  # the first data is sent even if oversized
                    records = plog.read(fetch_offset, max(limit, 1),
                                        None if follower else high_watermark)
                total += len(records)
                results.append((0, high_watermark, plog.log_start_offset, records))
            except Exception as exc:  # noqa: BLE001 - every failure becomes a code
                code = error_code_for(exc, f"fetch {topic}-{partition}")
                results.append((code, *_log_ends(part)))
                errors = True
    return results, total, errors


def _log_ends(part: Partition) -> tuple[int, int, bytes]:
    """(high watermark, log start, no records) for a failed read: an OFFSET_OUT_OF_RANGE
    answer tells the client where the log now starts and ends, as Kafka's does, so it can
    move on (-1 each when the log cannot say, e.g. closed under the read)."""
    try:
        return part.high_watermark, part.log.log_start_offset, b""
    except Exception:  # noqa: BLE001 - the read's own error is the answer
        return -1, -1, b""


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


def fetch(service: DataService, request: FetchRequest, denied: frozenset = NOTHING_DENIED,
          woken: bool = False):
    """The partitions' records now, or an awaitable of them once ``min_bytes`` are there
    or ``max_wait_ms`` passed (a long poll), or once the dormant logs it names are open
    (``waking.DormantWaits``; ``woken``: they were, and one that failed to open fails
    here)."""
    path = service.path
    if not woken:
        dormant = path.replicas.dormant_or_held(request.partitions, denied)
        if dormant is not None:
            return service.waits.read_after(path.replicas, dormant,
                                            lambda: fetch(service, request, denied, True))
    plan = _fetch_plan(path, request, denied)
    results, total, errors = _read_plan(path, request, plan, denied)
    if total >= request.min_bytes or errors or request.max_wait_ms == 0:
        if total and request.replica_id < 0:  # consumers' reads, not followers'
            observe_fetched(request.partitions, results)
        return results
    return _long_poll(path, request, plan, denied)


async def _long_poll(path: DataPath, request: FetchRequest, plan: list, denied: frozenset
                     ) -> list[Fetched]:
    """Wait until ``min_bytes`` are available or ``max_wait_ms`` passes; woken by appends."""
    loop = asyncio.get_running_loop()
    wait_ms = min(request.max_wait_ms, path.config.request_timeout_ms)
    deadline = loop.time() + wait_ms / 1000
    # Consumers wake when the high watermark moves (on plog), followers on appends (on the
    # partition): a follower is not woken just to hear a new HW, a consumer not for data
    # it may not read yet.
    follower = request.replica_id >= 0
    logs = [part if follower else part.log for part in plan if part is not None]
    while True:
        woken = loop.create_future()
        path.notifier.register(logs, woken)
        try:
            results, total, errors = _read_plan(path, request, plan, denied)
            remaining = deadline - loop.time()
            if (total >= request.min_bytes or errors or remaining <= 0
                    or path.lifecycle.stopping):
                if total and not follower:
                    observe_fetched(request.partitions, results)
                return results
            try:
                async with asyncio.timeout(remaining):
                    await woken
            except TimeoutError:
                pass
        finally:
            path.notifier.unregister(logs, woken)


# ------------------------------------------------------------------------------- list offsets

_DENIED_OFFSET = (TOPIC_DENIED, -1, -1, -1)  # a FoundOffset


def _list_special(part: Partition, timestamp: int, limit: int) -> tuple[int, int, int]:
    """(error code, offset, timestamp) for LATEST, EARLIEST or an invalid negative time."""
    if timestamp == LATEST_TIMESTAMP:
        return 0, limit, -1
    if timestamp == EARLIEST_TIMESTAMP:
        return 0, part.log.log_start_offset, -1
    return ErrorCode.INVALID_REQUEST, -1, -1


def _hosted_but_denied(path: DataPath, queries: list, denied: frozenset
                       ) -> list[Partition | None]:
    """Each query's partition here (None: not here); a denied topic's are not looked up."""
    get = path.replicas.get
    return [None if query[0] in denied else get(query[0], query[1]) for query in queries]


def list_offsets(service: DataService, request: ListOffsetsRequest,
                 denied: frozenset = NOTHING_DENIED, woken: bool = False):
    """Each query's answer (a list of ``FoundOffset``, or an awaitable of it). Consumers
    see only what is below the high watermark (an uncommitted match answers "none", as
    Kafka does); replicas see the log end.

    The per-partition work is the log's own lookup and a few attribute reads: the
    partitions are found in one call (``ReplicaManager.get_all``), a leader alone in its
    ISR reads its high watermark as the log end (``Partition.high_watermark``, inline), and
    the lookups are timed and counted for the metrics once for the request, not once each.
    A request naming dormant logs is answered once they are open
    (``waking.DormantWaits``; ``woken``: they were)."""
    path = service.path
    if not woken:
        dormant = path.replicas.dormant_or_held(request.queries, denied)
        if dormant is not None:
            return service.waits.read_after(
                path.replicas, dormant, lambda: list_offsets(service, request, denied, True))
    queries = request.queries
    replica = request.replica_id >= 0
    index = request.timestamp_type
    count = scanned = 0
    started = time.perf_counter()
    results = []
    if len(queries) == 1 and not denied:  # the usual lookup: no list of one to build
        hosted = (path.replicas.get(queries[0][0], queries[0][1]),)
    else:
        hosted = (_hosted_but_denied(path, queries, denied) if denied
                  else path.replicas.get_all(queries))
    for (topic, partition, timestamp), part in zip(queries, hosted):
        if part is None:
            results.append(_DENIED_OFFSET if topic in denied else (
                missing_code(path.topics, topic, partition), -1, -1, -1))
            continue
        if part.role != LEADER:
            results.append((ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, -1))
            continue
        plog = part.log
        code = offset = found_time = -1
        try:
            limit = (plog.log_end_offset if replica or part.alone
                     else part.replica.high_watermark)
            if timestamp >= 0 or timestamp == MAX_TIMESTAMP:
                before = plog.lookup_bytes_read
                found = plog.offset_for_time(
                    timestamp, index or _INDEX[plog.config.message_timestamp_type])
                count += 1
                scanned += plog.lookup_bytes_read - before
                code = 0
                if found is not None and found[0] < limit:
                    offset, found_time = found
            else:
                code, offset, found_time = _list_special(part, timestamp, limit)
        except Exception as exc:  # noqa: BLE001
            code = error_code_for(exc, f"list offsets {topic}-{partition}")
            offset = found_time = -1
        results.append((code, offset, found_time, part.leader_epoch if offset >= 0 else -1))
    if count:
        observe_lookups(count, time.perf_counter() - started, scanned)
    return results


class DataService:
    """Produce, fetch and list offsets on this broker's partitions, and Metadata.

    The data methods are the module's functions themselves (``produce(service, request,
    denied)``), not wrappers around them: the service is on every request's path, and a
    wrapper would be one more call each."""

    __slots__ = ("path", "lists", "cluster", "waits")

    def __init__(self, path: DataPath, lists: PartitionLists, cluster: ClusterView) -> None:
        self.path = path
        self.lists = lists  # Metadata's kept partition lists
        self.cluster = cluster  # the partitions' leaders and where each broker listens
        self.waits = DormantWaits()  # requests waiting for dormant logs to open

    produce = produce
    fetch = fetch
    list_offsets = list_offsets

    def metadata(self, request: MetadataRequest, denied: frozenset = NOTHING_DENIED,
                 visible: Callable[[str], bool] | None = None) -> Metadata:
        return metadata(self.path.topics, self.lists, self.cluster, request, denied, visible)
