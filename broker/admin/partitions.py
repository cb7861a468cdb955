"""``PartitionAdmin``: the partition-level admin APIs, on typed requests, for both front doors.

DeleteRecords (Kafka's API 21, ``kafka-delete-records``): move each partition's log start up
to an offset, durably, freeing whole segments below it. The leader only, and the high
watermark is the bound: records at or past it are not committed yet (Kafka refuses them with
OFFSET_OUT_OF_RANGE too); followers learn the new start from the leader's Fetch answers. The
fsync of the start offset and the unlinks run in a thread (storage does no asyncio), so the
event loop never waits on a disk.

OffsetForLeaderEpoch (23) is what a follower of a new leader asks before fetching (KIP-101):
the end, in the leader's log, of the latest epoch the follower knows; the follower truncates
there. InitProducerId (22) hands an idempotent producer a cluster-unique id from the view.
OffsetsAtTimes (1000, tslog's own) is in ``offsets_at_times.py``; the reassignments and
elections in ``reassignments.py``; DescribeLogDirs (35, Kafka's port only) here.

``denied``: the topics the request gate (``security/partition_admin_gate.py``) refused for
this principal; their partitions are answered TOPIC_AUTHORIZATION_FAILED and nothing else is
done for them. A cluster-level denial never reaches the service.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil

from tslog.protocol.errors import ErrorCode

from ..cluster.view import ClusterView
from ..data.error_codes import TOPIC_DENIED, error_code_for, missing_code
from ..replication.manager import ReplicaManager
from ..replication.partition import LEADER
from ..topics import TopicManager
from .offsets_at_times import offsets_at_times
from .partition_requests import (
    HIGH_WATERMARK,
    AlterReassignmentsRequest,
    DeleteRecordsRequest,
    DescribeLogDirsRequest,
    Election,
    ElectLeadersRequest,
    EpochEnd,
    InitProducerIdRequest,
    ListReassignmentsRequest,
    LogDir,
    LogStart,
    OffsetForLeaderEpochRequest,
    Outcome,
    ProducerId,
    Reassignment,
)
from .reassignments import ReassignmentService

log = logging.getLogger("tslog.broker.handlers")

NOTHING_DENIED: frozenset[str] = frozenset()
_NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER  # read per partition (see ApiKey's note)


async def delete_records(admin: PartitionAdmin, request: DeleteRecordsRequest,
                         denied: frozenset = NOTHING_DENIED) -> list[LogStart]:
    """Each partition's log start afterwards, in the request's order."""
    return [LogStart(TOPIC_DENIED, -1) if cut.topic in denied
            else await _delete_one(admin, *cut) for cut in request.partitions]


async def _delete_one(admin: PartitionAdmin, topic: str, partition: int,
                      offset: int) -> LogStart:
    part = admin.replicas.get(topic, partition)
    if part is None:
        return LogStart(missing_code(admin.topics, topic, partition), -1)
    if part.role != LEADER:
        return LogStart(_NOT_LEADER, -1)
    high_watermark = part.high_watermark
    target = high_watermark if offset == HIGH_WATERMARK else offset
    if not 0 <= target <= high_watermark:
        return LogStart(ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    try:
        low = await asyncio.to_thread(part.log.delete_records_before, target)
    except Exception as exc:  # noqa: BLE001 - a closed log, a disk error: a code, logged
        return LogStart(error_code_for(exc, f"delete records of {topic}-{partition}"), -1)
    return LogStart(0, low)


async def init_producer_id(admin: PartitionAdmin,
                           request: InitProducerIdRequest) -> ProducerId:
    try:
        producer_id = await admin.cluster.allocate_producer_id()
    except Exception:  # noqa: BLE001 - the store is unreachable: the client retries
        log.exception("allocating a producer id failed")
        return ProducerId(ErrorCode.BROKER_NOT_AVAILABLE, -1, -1)
    return ProducerId(0, producer_id, 0)


def offset_for_leader_epoch(admin: PartitionAdmin, request: OffsetForLeaderEpochRequest,
                            denied: frozenset = NOTHING_DENIED) -> list[EpochEnd]:
    """Per query, in order: the end offset of the asked epoch in this leader's log. Each
    result is a plain tuple of ``EpochEnd``'s fields (a follower's request: no named
    tuple per partition)."""
    get = admin.replicas.get
    results = []
    for topic, partition, leader_epoch in request.queries:
        part = None if topic in denied else get(topic, partition)
        if part is None:
            code = TOPIC_DENIED if topic in denied else missing_code(admin.topics, topic,
                                                                     partition)
            results.append((code, -1, -1))
        elif part.role != LEADER:
            results.append((_NOT_LEADER, -1, -1))
        else:
            results.append((0, *part.replica.epochs.end_offset_for(
                leader_epoch, part.log.log_end_offset)))
    return results


async def alter_reassignments(admin: PartitionAdmin,
                              request: AlterReassignmentsRequest) -> list[Outcome]:
    return await admin.reassignments.alter(request.moves, set(admin.topics.topics))


def list_reassignments(admin: PartitionAdmin,
                       request: ListReassignmentsRequest) -> list[Reassignment]:
    return admin.reassignments.listed(request.partitions)


async def elect_leaders(admin: PartitionAdmin, request: ElectLeadersRequest) -> list[Election]:
    return await admin.reassignments.elect(request.partitions, set(admin.topics.topics))


def describe_log_dirs(admin: PartitionAdmin, request: DescribeLogDirsRequest) -> LogDir:
    """The one log directory, with each hosted partition's size (its segments' sizes).

    A tslog broker keeps every partition in its ``data_dir``; the disk's total and free
    bytes are -1 when the directory vanished under the broker, as Kafka answers."""
    wanted = None if request.partitions is None else set(request.partitions)
    hosted = [(topic, partition, plog.size_bytes)
              for (topic, partition), plog in sorted(admin.topics.logs.items())
              if wanted is None or (topic, partition) in wanted]
    data_dir = os.path.abspath(admin.data_dir)
    try:
        usage = shutil.disk_usage(data_dir)
        total, usable = usage.total, usage.free
    except OSError:
        total = usable = -1
    return LogDir(data_dir, total, usable, hosted)


class PartitionAdmin:
    """The partition admin APIs on this broker's partitions, for both front doors.

    The methods are the module's functions themselves (``delete_records(admin, request,
    denied)``), as the data service's are: OffsetForLeaderEpoch is a follower's request."""

    __slots__ = ("topics", "replicas", "cluster", "reassignments", "data_dir")

    def __init__(self, topics: TopicManager, replicas: ReplicaManager, cluster: ClusterView,
                 reassignments: ReassignmentService, data_dir: str) -> None:
        self.topics = topics  # to tell "not here" from "no such partition"; the logs
        self.replicas = replicas  # the hosted partitions and their roles
        self.cluster = cluster  # producer ids
        self.reassignments = reassignments
        self.data_dir = data_dir  # DescribeLogDirs' one directory

    delete_records = delete_records
    init_producer_id = init_producer_id
    offset_for_leader_epoch = offset_for_leader_epoch
    offsets_at_times = offsets_at_times
    alter_reassignments = alter_reassignments
    list_reassignments = list_reassignments
    elect_leaders = elect_leaders
    describe_log_dirs = describe_log_dirs
