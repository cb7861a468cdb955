"""``GroupCatalog``: one view of every consumer group, whichever protocol its members speak,
for the admin APIs of both ports (ListGroups, ConsumerGroupDescribe, Kafka's DescribeGroups).

Why one place: a group id can be known to tslog's coordinator (KIP-848 members, on tslog's
port), to Kafka's classic coordinator (JoinGroup members, on the Kafka port), or only to the
committed offsets. Listing and describing each read those three sources in their own order
once, and disagreed (issue 41: a confluent-kafka group listed ``STABLE 2 members`` was
described ``EMPTY, epoch 0, 0 members``). Here the rule is written once (``_source``) and
both read it, ``describe`` from the coordinators' descriptions and ``list_groups`` from the
same groups' listings (a listing builds no member views: ListGroups stays a few calls per
group):

1. a group id is the kind whose members it has (one group id is one kind while it has
   members: each coordinator refuses a join to a group id the other has members in);
2. without members: tslog's coordinator's group if it knows the id, else the classic group
   if that one knows it (Kafka keeps an empty classic group until it is deleted);
3. else, if the id has committed offsets: an EMPTY group with no members (as in Kafka, a
   group whose clients only ever committed exists);
4. else the group does not exist (``describe`` returns None).

Reads only: no I/O, no clock. Owner: the event loop, like the services it reads.
"""

from __future__ import annotations

from typing import NamedTuple

from .classic_service import ClassicGroupService
from .classic_views import ClassicGroupDescription, ClassicState
from .committed_offsets import CommittedOffsets
from .consumer_protocol import consumer_assignment
from .service import GroupService
from .views import GroupDescription, GroupState

CONSUMER = "consumer"  # tslog's own protocol (KIP-848): Kafka 4 lists it as type Consumer
CLASSIC = "classic"    # Kafka's JoinGroup/SyncGroup protocol
OFFSETS = "offsets"    # no coordinator knows the id; it has committed offsets (listed Classic)


class MemberView(NamedTuple):
    """One member, of either protocol. A classic member's epoch is its group's generation,
    its partitions are read from the assignment its leader sent (none if that is not
    Kafka's consumer protocol), and it has no revoking or target partitions; ``metadata``
    and ``assignment`` are its raw protocol bytes (empty for a KIP-848 member)."""

    member_id: str
    member_epoch: int
    state: str
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    assigned: tuple[tuple[str, int], ...]
    revoking: tuple[tuple[str, int], ...] = ()
    target: tuple[tuple[str, int], ...] = ()
    metadata: bytes = b""
    assignment: bytes = b""


class GroupView(NamedTuple):
    """A group as both ports' admin APIs describe and list it. ``state`` is the upper-case
    name of its coordinator's state (``STABLE``, ``RECONCILING``, ``PREPARING_REBALANCE``,
    ``EMPTY`` ...); ``assignor`` is the classic group's chosen protocol name, and
    ``protocol_type`` its protocol type (``consumer`` for tslog's groups and offsets-only
    ones)."""

    group_id: str
    kind: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    protocol_type: str
    members: tuple[MemberView, ...]


class GroupSummary(NamedTuple):
    """A group as ListGroups shows it: what ``describe`` would say of its kind, state and
    member count, read without building every member's view. (Named tuples, not frozen
    dataclasses: a listing makes one per group, and a tuple is built in one call.)"""

    group_id: str
    kind: str
    state: str
    member_count: int
    protocol_type: str


class GroupCatalog:
    """Reads the two coordinators and the committed offsets; see the module's rules, which
    ``_source`` applies for ``describe`` and ``list_groups`` alike."""

    def __init__(self, groups: GroupService, classic: ClassicGroupService,
                 offsets: CommittedOffsets) -> None:
        self.groups = groups
        self.classic = classic
        self.offsets = offsets

    def describe(self, group_id: str) -> GroupView | None:
        """The group, or None if no coordinator knows it and it has no committed offset."""
        coordinator = self.groups.coordinator
        native = None if coordinator is None else coordinator.describe(group_id)
        known = native is not None and native.state is not GroupState.DEAD
        classic = self.classic.describe(group_id)
        source = _source(known, len(native.members) if known else 0,
                         classic.state is not ClassicState.DEAD, len(classic.members),
                         self.offsets.has_offsets(group_id))
        if source == CONSUMER:
            return _native_view(native)
        if source == CLASSIC:
            return _classic_view(classic)
        if source == OFFSETS:
            return GroupView(group_id, CLASSIC, "EMPTY", 0, 0, self.groups.config.assignor,
                             CONSUMER, ())
        return None

    def list_groups(self) -> list[GroupSummary]:
        """Every group, sorted by id, each as ``describe`` sees it: the coordinator's
        listings (state and member count) stand in for its descriptions."""
        coordinator = self.groups.coordinator
        natives = {} if coordinator is None else {
            listing.group_id: listing for listing in coordinator.list_groups()}
        classics = {group_id: self.classic.describe(group_id)
                    for group_id in self.classic.group_ids()}
        committed = {group_id for group_id, offsets in self.offsets.all_groups().items()
                     if offsets}
        summaries = []
        for group_id in sorted(natives.keys() | classics.keys() | committed):
            native, classic = natives.get(group_id), classics.get(group_id)
            source = _source(native is not None, native.member_count if native else 0,
                             classic is not None, len(classic.members) if classic else 0,
                             group_id in committed)
            if source == CONSUMER:
                summaries.append(GroupSummary(group_id, CONSUMER, native.state.name,
                                              native.member_count, CONSUMER))
            elif source == CLASSIC:
                summaries.append(GroupSummary(group_id, CLASSIC, classic.state.name,
                                              len(classic.members),
                                              classic.protocol_type or CONSUMER))
            elif source == OFFSETS:
                summaries.append(GroupSummary(group_id, CLASSIC, "EMPTY", 0, CONSUMER))
        return summaries


def _source(native_known: bool, native_members: int, classic_known: bool,
            classic_members: int, has_offsets: bool) -> str | None:
    """Which source describes a group id (the module's rules 1-4, in order): CONSUMER (tslog's
    coordinator), CLASSIC, OFFSETS (committed offsets only) or None (no such group)."""
    if native_members:
        return CONSUMER
    if classic_members:
        return CLASSIC
    if native_known:
        return CONSUMER
    if classic_known:
        return CLASSIC
    return OFFSETS if has_offsets else None


def _native_view(group: GroupDescription) -> GroupView:
    members = tuple([MemberView(
        m.member_id, m.member_epoch, m.state.name, m.client_id, m.client_host,
        tuple(sorted(m.subscribed_topics)), tuple(sorted(m.assigned)),
        tuple(sorted(m.revoking)), tuple(sorted(m.target))) for m in group.members])
    return GroupView(group.group_id, CONSUMER, group.state.name, group.group_epoch,
                     group.assignment_epoch, group.assignor, CONSUMER, members)


def _classic_view(group: ClassicGroupDescription) -> GroupView:
    consumer = group.protocol_type in (None, "", CONSUMER)
    member_state = "STABLE" if group.state is ClassicState.STABLE else "REBALANCING"
    members = tuple(MemberView(
        m.member_id, group.generation_id, member_state, m.client_id, m.client_host, (),
        tuple((entry["topic"], partition) for entry in consumer_assignment(m.assignment)
              for partition in entry["partitions"]) if consumer else (),
        metadata=m.metadata, assignment=m.assignment) for m in group.members)
    generation = max(group.generation_id, 0)
    return GroupView(group.group_id, CLASSIC, group.state.name, generation, generation,
                     group.protocol_name or "", group.protocol_type or CONSUMER, members)
