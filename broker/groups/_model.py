"""The coordinator's state: groups, their members, and how both become plain dicts.

Why plain dicts: a group's state must outlive the process that holds it. A single broker
writes it to its data dir, a cluster to etcd, and a broker taking over as coordinator rebuilds
every group from those records alone. Records hold only str, int, list and dict (JSON as is);
partitions are written as ``{topic: [partition, ...]}`` with sorted keys and lists, so the
same state always gives the same record.

Ownership vocabulary used throughout the package:

- a member's *target* is what the assignor wants it to own (``Group.target``);
- ``Member.assigned`` is what the coordinator has handed it: it may read these now;
- ``Member.revoking`` is what it has been told to give up but has not yet reported as given
  up; it still counts as the owner, so nobody else is handed these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .assignors import Partition

RECORD_FORMAT = 1  # bumped when a record's shape changes; from_record refuses others


def check_format(record: Mapping) -> None:
    if record.get("format") != RECORD_FORMAT:
        raise ValueError(f"group coordinator record format {record.get('format')!r}, "
                         f"expected {RECORD_FORMAT}")


def partitions_to_record(partitions: Iterable[Partition]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return by_topic


def partitions_from_record(record: Mapping[str, Iterable[int]]) -> set[Partition]:
    return {(str(topic), int(partition)) for topic, partitions in record.items()
            for partition in partitions}


@dataclass(eq=False)
class Member:
    """One consumer in a group, as the coordinator sees it. Mutable: owned by its Group.

    ``member_epoch`` is the assignment epoch the member has reconciled to; it moves only once
    the member holds nothing it must give up, which is what lets a commit be fenced by epoch.
    ``previous_member_epoch`` lets a member whose heartbeat response was lost retry with the
    epoch it still knows. Times are the coordinator's clock, in milliseconds.
    """

    member_id: str
    subscribed_topics: frozenset[str]
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: set[Partition] = field(default_factory=set)
    revoking: set[Partition] = field(default_factory=set)
    last_heartbeat_ms: int = 0
    revocation_deadline_ms: int | None = None  # set while ``revoking`` is not empty
    # Who the member is, for operators (describe): the request header's client id and the
    # address its join came from. Records written before these existed rebuild them as "".
    client_id: str = ""
    client_host: str = ""

    def owned(self) -> set[Partition]:
        """Partitions nobody else may be handed while this member is in the group."""
        return self.assigned | self.revoking

    def to_record(self) -> dict:
        return {
            "member_id": self.member_id,
            "subscribed_topics": sorted(self.subscribed_topics),
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "assigned": partitions_to_record(self.assigned),
            "revoking": partitions_to_record(self.revoking),
            "client_id": self.client_id,
            "client_host": self.client_host,
        }

    @classmethod
    def from_record(cls, record: Mapping, now_ms: int, rebalance_timeout_ms: int) -> Member:
        """Rebuild a member; its session and any revocation deadline restart at ``now_ms``
        (the old coordinator's clock readings mean nothing here, and a member deserves a full
        session to find the new coordinator)."""
        member = cls(
            member_id=str(record["member_id"]),
            subscribed_topics=frozenset(map(str, record["subscribed_topics"])),
            member_epoch=int(record["member_epoch"]),
            previous_member_epoch=int(record["previous_member_epoch"]),
            assigned=partitions_from_record(record["assigned"]),
            revoking=partitions_from_record(record["revoking"]),
            last_heartbeat_ms=now_ms,
            client_id=str(record.get("client_id", "")),
            client_host=str(record.get("client_host", "")),
        )
        if member.revoking:
            member.revocation_deadline_ms = now_ms + rebalance_timeout_ms
        return member


@dataclass(eq=False)
class Group:
    """One consumer group. ``group_epoch`` counts changes of members, subscriptions and
    subscribed topics' metadata; ``assignment_epoch`` is the group epoch ``target`` was
    computed at. While the first is ahead of the second, the target is stale (ASSIGNING)."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, frozenset[Partition]] = field(default_factory=dict)

    def subscribed_topics(self) -> set[str]:
        return set().union(*(member.subscribed_topics for member in self.members.values()))

    def owned_by_others(self, member_id: str) -> set[Partition]:
        return set().union(*(member.owned() for other_id, member in self.members.items()
                             if other_id != member_id))

    def to_record(self) -> dict:
        return {
            "format": RECORD_FORMAT,
            "group_id": self.group_id,
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "members": [self.members[member_id].to_record() for member_id in sorted(self.members)],
            "target": {member_id: partitions_to_record(partitions)
                       for member_id, partitions in sorted(self.target.items())},
        }

    @classmethod
    def from_record(cls, record: Mapping, now_ms: int, rebalance_timeout_ms: int) -> Group:
        """Rebuild a group (see ``Member.from_record`` for the clock).

        Raises:
            ValueError: the record has another format.
        """
        check_format(record)
        members = [Member.from_record(item, now_ms, rebalance_timeout_ms)
                   for item in record["members"]]
        return cls(
            group_id=str(record["group_id"]),
            group_epoch=int(record["group_epoch"]),
            assignment_epoch=int(record["assignment_epoch"]),
            members={member.member_id: member for member in members},
            target={str(member_id): frozenset(partitions_from_record(partitions))
                    for member_id, partitions in record["target"].items()},
        )
