"""Consumer groups for operators: list, describe, read and change offsets, delete.

Why a module of its own: these calls go to a group's coordinator (the cluster's controller,
see docs/groups.md), not to partition leaders, and have their own refusal rules; ``AsyncAdmin``
delegates to ``GroupAdmin`` so topic administration and group administration stay small.

Offsets are changed with an OffsetCommit outside group management (``member_id`` "" and
``member_epoch`` -1). That is only sound while no consumer of the group is running (a live
member would overwrite the change with its next commit, or be fenced), so a group with
members is refused with ``NonEmptyGroupError`` both here, before anything is sent, and when
the coordinator itself refuses the commit (UNKNOWN_MEMBER_ID).
"""

from __future__ import annotations

import asyncio

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP

from ._cluster import Cluster
from ._group_coordinator import MOVED, GroupCoordinators
from ._offsets import group_by_topic, list_offsets
from ._types import (
    GroupDescription,
    GroupListing,
    MemberDescription,
    OffsetAndMetadata,
    TopicPartition,
)
from .errors import OffsetOutOfRangeError, TslogError, error_for

NonEmptyGroupError = error_for(ErrorCode.NON_EMPTY_GROUP)
GroupIdNotFoundError = error_for(ErrorCode.GROUP_ID_NOT_FOUND)

OUTSIDE_MEMBER_ID = ""   # OffsetCommit v1: a commit by no member ...
OUTSIDE_EPOCH = -1       # ... of any epoch: an operator's change, not a consumer's


def _raise_for(code: int, context: str) -> None:
    """Raise the code's error with what was being done and what the code means, e.g.
    "describing consumer group 'x': The group id does not exist." """
    if code:
        cls = error_for(code)
        raise cls(f"{context}: {cls.error_code.message}")


def _explained(error: TslogError) -> TslogError:
    """A wire error raised with only a context (as FindCoordinator's are), given the code's
    meaning too, so the command line's one-line message says what went wrong."""
    detail = error.error_code.message
    if type(error) is not error_for(error.error_code) or detail in str(error):
        return error
    return type(error)(f"{error}: {detail}")


def _partitions(topics) -> list[TopicPartition]:
    return sorted(TopicPartition(group["topic"], partition)
                  for group in topics for partition in group["partitions"])


def _description(group: dict) -> GroupDescription:
    members = [MemberDescription(m["member_id"], m["member_epoch"], m["state"],
                                 list(m["subscribed_topics"]), _partitions(m["assigned"]),
                                 _partitions(m["revoking"]), _partitions(m["target"]),
                                 m.get("client_id", ""), m.get("client_host", ""))
               for m in group["members"]]
    return GroupDescription(group["group_id"], group["state"], group["group_epoch"],
                            group["assignment_epoch"], group["assignor"], members)


def _live_members_error(group_id: str, members: int | None = None) -> NonEmptyGroupError:
    count = "" if members is None else f" ({members})"
    return NonEmptyGroupError(
        f"group {group_id!r} has live members{count}: stop its consumers (or wait until "
        "their session times out) before changing or deleting it")


class GroupAdmin:
    """The group half of ``AsyncAdmin``; shares its ``Cluster`` (connections, retries)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._coordinators = GroupCoordinators(cluster)

    def _controller(self) -> int | None:
        controller = self._cluster.controller_id
        return controller if controller in self._cluster.brokers else None

    async def _request(self, group_id: str, api_key: int, body: dict, codes, *,
                       api_version: int = 0) -> dict:
        """``GroupCoordinators.request`` with its errors explained (see ``_explained``)."""
        try:
            return await self._coordinators.request(group_id, api_key, body, codes,
                                                    api_version=api_version)
        except TslogError as error:
            explained = _explained(error)
            if explained is error:
                raise
            raise explained from error

    async def list_groups(self) -> list[GroupListing]:
        """Every group the coordinator knows and every group with committed offsets (one that
        only has offsets is EMPTY with 0 members), sorted by id.

        ListGroups goes to the controller, which coordinates every group; a broker that
        is not (or no longer) the controller answers NOT_COORDINATOR, and the request is
        sent again after a metadata refresh names the new controller."""
        attempt = 0
        while True:
            if self._controller() is None:
                await self._cluster.refresh_metadata()
            body = await self._cluster.request(self._controller(), ApiKey.LIST_GROUPS,
                                               {"states": None})
            code = body.get("error_code", 0)
            if code in MOVED and attempt < self._cluster.retries:
                await asyncio.sleep(self._cluster.backoff_s(attempt))
                await self._cluster.refresh_metadata()
                attempt += 1
                continue
            _raise_for(code, "listing consumer groups")
            return sorted((GroupListing(g["group_id"], g["state"], g["members"])
                           for g in body["groups"]), key=lambda listing: listing.group_id)

    async def describe_groups(self, group_ids) -> dict[str, GroupDescription]:
        """{group id: GroupDescription}. Raises GroupIdNotFoundError for an unknown group."""
        result = {}
        for group_id in group_ids:
            body = await self._request(
                group_id, ApiKey.CONSUMER_GROUP_DESCRIBE, {"groups": [group_id]},
                lambda answer: [g["error_code"] for g in answer["groups"]])
            (group,) = body["groups"]
            _raise_for(group["error_code"], f"describing consumer group {group_id!r}")
            result[group_id] = _description(group)
        return result

    async def _member_count(self, group_id: str) -> int:
        """How many members the group has now (0 for a group that does not exist yet: setting
        its offsets makes it)."""
        try:
            description = (await self.describe_groups([group_id]))[group_id]
        except GroupIdNotFoundError:
            return 0
        return len(description.members)

    async def committed(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """Every offset the group has committed (OffsetFetch for all partitions)."""
        body = await self._request(
            group_id, ApiKey.OFFSET_FETCH, {"group_id": group_id, "topics": None},
            lambda answer: [p["error_code"] for t in answer["topics"] for p in t["partitions"]])
        result = {}
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                _raise_for(part["error_code"], f"offsets of group {group_id!r} for {tp}")
                if part["offset"] >= 0:
                    result[tp] = OffsetAndMetadata(part["offset"], part["metadata"])
        return dict(sorted(result.items()))

    async def log_bounds(self, partitions) -> dict[TopicPartition, tuple[int, int]]:
        """{tp: (log start, log end)}: the offsets a group may be set to."""
        partitions = [TopicPartition(*tp) for tp in partitions]
        starts = await list_offsets(self._cluster, {tp: EARLIEST_TIMESTAMP for tp in partitions})
        ends = await list_offsets(self._cluster, {tp: LATEST_TIMESTAMP for tp in partitions})
        return {tp: (starts[tp].offset if starts[tp] else 0, ends[tp].offset if ends[tp] else 0)
                for tp in partitions}

    async def alter_offsets(self, group_id: str, offsets: dict) -> None:
        """Set the group's committed offsets: ``{tp: offset or OffsetAndMetadata}``.

        Raises:
            OffsetOutOfRangeError: an offset outside [log start, log end] of its partition
                (nothing is changed).
            NonEmptyGroupError: the group has live members (nothing is changed).
            UnknownTopicOrPartitionError, ...: per the broker's answer.
        """
        entries = {}
        for tp, value in offsets.items():
            offset, metadata = (value.offset, value.metadata) if isinstance(
                value, OffsetAndMetadata) else (int(value), "")
            entries[TopicPartition(*tp)] = {"offset": offset, "metadata": metadata}
        if not entries:
            return
        bounds = await self.log_bounds(entries)
        for tp, entry in entries.items():
            start, end = bounds[tp]
            if not start <= entry["offset"] <= end:
                raise OffsetOutOfRangeError(
                    f"offset {entry['offset']} of {tp.topic}-{tp.partition} is outside its "
                    f"log [{start}, {end}]")
        members = await self._member_count(group_id)
        if members:
            raise _live_members_error(group_id, members)
        body = await self._request(
            group_id, ApiKey.OFFSET_COMMIT,
            {"group_id": group_id, "member_id": OUTSIDE_MEMBER_ID,
             "member_epoch": OUTSIDE_EPOCH, "topics": group_by_topic(entries)},
            lambda answer: [p["error_code"] for t in answer["topics"] for p in t["partitions"]],
            api_version=1)
        for topic in body["topics"]:
            for part in topic["partitions"]:
                code = part["error_code"]
                if code == ErrorCode.UNKNOWN_MEMBER_ID:
                    raise _live_members_error(group_id)
                _raise_for(code, f"setting the offset of group {group_id!r} for "
                                f"{topic['topic']}-{part['partition']}")

    async def delete_groups(self, group_ids) -> None:
        """Delete empty groups, each with every offset it committed. Raises
        NonEmptyGroupError for a group with members (nothing is deleted) and
        GroupIdNotFoundError for one with neither members' state nor committed offsets."""
        for group_id in group_ids:
            body = await self._request(
                group_id, ApiKey.DELETE_GROUPS, {"groups": [group_id]},
                lambda answer: [r["error_code"] for r in answer["results"]])
            for result in body["results"]:
                if result["error_code"] == ErrorCode.NON_EMPTY_GROUP:
                    raise _live_members_error(result["group_id"])
                _raise_for(result["error_code"], f"deleting consumer group {result['group_id']!r}")
