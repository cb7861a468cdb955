"""OffsetCommit and OffsetFetch of the group service (``api.GroupApi``), for both ports.

Module functions bound into ``GroupApi`` (``offset_commit(api, request, denied)``), as the
data service binds its own: the rules of a commit are written once, here, and each port's
adapter only translates. ``denied``: the topics the request gate refused for the principal
(Read for a commit, Describe for a fetch); their partitions are answered
TOPIC_AUTHORIZATION_FAILED and nothing else is done for them. A group the gate refused never
reaches the service.

A commit is refused whole (every partition carries the code, nothing is stored) for an
invalid group id, a broker that does not coordinate the groups now, or a committer the
group's coordinator fences (docs/groups.md, "Fencing"): a removed member, a stale epoch or
generation, a plain client while the group has members. A group id with tslog members is
fenced by tslog's coordinator; on Kafka's port (``classic``) any other by the classic
group's rules. The answer waits for the offsets to be durable.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode

from ..metrics.observe import observe_commit
from .offset_files import MAX_METADATA_BYTES, group_id_problem
from .requests import (
    CommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetsFetched,
    make,
)

log = logging.getLogger("tslog.broker.groups")

NOTHING_DENIED: frozenset[str] = frozenset()
TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _group_problem(api, group_id: str) -> int:
    """The refusal of a whole request for the group (0: none): a bad id, the placement."""
    if group_id_problem(group_id) is not None:
        return int(ErrorCode.INVALID_GROUP_ID)
    return int(api.placement())


def _fence(api, request: OffsetCommitRequest) -> int:
    coordinator = api.groups.coordinator
    if request.classic and (coordinator is None
                            or not coordinator.describe(request.group_id).members):
        return int(api.classic.validate_commit(request.group_id, request.generation,
                                               request.member_id))
    return int(coordinator.validate_commit(request.group_id, request.member_id,
                                           request.generation))


def _partition_code(api, entry: CommitPartition, classic: bool) -> int:
    """A commit names an existing partition (of the cluster's topics: in a cluster the broker
    storing offsets need not host a replica of it) and carries small metadata."""
    topic, partition, offset, metadata = entry
    known = api.topics.topics.get(topic)
    if known is None or not 0 <= partition < known.partitions:
        return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if classic and offset < -1:
        return int(ErrorCode.INVALID_REQUEST)
    if len(metadata.encode()) > MAX_METADATA_BYTES:
        return int(ErrorCode.OFFSET_METADATA_TOO_LARGE)
    return 0


def offset_commit(api, request: OffsetCommitRequest, denied: frozenset = NOTHING_DENIED):
    """Each partition's error code, in order (an awaitable of them when offsets are stored:
    the answer waits for the fsync)."""
    refused = _group_problem(api, request.group_id) or _fence(api, request)
    codes, offsets = [], {}
    classic = request.classic
    for entry in request.partitions:  # (topic, partition, offset, metadata), by position
        code = (TOPIC_DENIED if entry[0] in denied else
                refused or _partition_code(api, entry, classic))
        if not code:
            offsets[entry[0], entry[1]] = (entry[2], entry[3])
        codes.append(code)
    if not offsets:
        return codes
    return _commit_durably(api, request.group_id, offsets, codes)


async def _commit_durably(api, group_id: str, offsets: dict, codes: list[int]) -> list[int]:
    """Answer once the offsets are fsynced. The group's FIFO lock keeps its commits in
    arrival order, so an older snapshot never lands after a newer one."""
    try:
        await api.offsets.commit(group_id, offsets)
        observe_commit(group_id)
    except OSError as exc:
        log.error("committing offsets of group %r failed: %r", group_id, exc)
        storage = int(ErrorCode.KAFKA_STORAGE_ERROR)
        codes = [code or storage for code in codes]
    return codes


def offset_fetch(api, request: OffsetFetchRequest, denied: frozenset = NOTHING_DENIED,
                 visible=None) -> OffsetsFetched:
    """The group's committed offsets of the partitions asked (-1 for none), or of every
    partition it has one for, sorted, those of topics ``visible`` refuses left out."""
    if request.classic:
        code = _group_problem(api, request.group_id)
        if code:
            return OffsetsFetched(code, [])
    committed = api.offsets.fetch(request.group_id)
    asked = request.partitions
    if asked is None:
        asked = [tp for tp in sorted(committed) if visible is None or visible(tp[0])]
    results = []  # ``FetchedOffset``'s fields, as plain tuples
    for topic, partition in asked:
        if topic in denied:
            results.append((topic, partition, -1, "", TOPIC_DENIED))
        else:
            offset, metadata = committed.get((topic, partition), (-1, ""))
            results.append((topic, partition, offset, metadata, 0))
    return make(OffsetsFetched, (0, results, None))
