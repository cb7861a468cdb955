"""``GroupApi``: the consumer-group APIs as one typed service, for both front doors.

FindCoordinator, ListGroups, describe (tslog's ConsumerGroupDescribe, Kafka's
DescribeGroups), DeleteGroups, OffsetCommit and OffsetFetch (``offsets_api.py``), Kafka's
OffsetDelete (``offset_delete.py``) and membership (``membership_api.py``: tslog's
ConsumerGroupHeartbeat, Kafka's JoinGroup, SyncGroup, Heartbeat and LeaveGroup) take a
typed request (``requests.py``) and return typed
results in the request's order; each port's adapter translates its body into the request
and the results into its answer, once. The request gate's ``GatedGroups``
(``security/group_gate.py``) stands in front of it with the same methods and passes the
groups it refused as ``denied``: those are answered GROUP_AUTHORIZATION_FAILED and nothing
else is done for them, so a denied part of a request changes nothing.

The rules are written once here, for both ports:

- Placement: every group's coordinator is the cluster's controller (a single broker is its
  own). FindCoordinator names it, on any broker; the other APIs are answered by it only:
  another broker answers NOT_COORDINATOR, the controller itself COORDINATOR_NOT_AVAILABLE
  while it is still loading the groups' state (``placement``).
- One view of a group (``catalog.GroupCatalog``), whichever protocol its members speak, so
  list and describe agree on both ports.
- Deleting a group deletes its coordinator state and every committed offset; a group with
  members of either protocol is refused (NON_EMPTY_GROUP).
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode

from ..cluster.view import ClusterView
from ..metrics.observe import forget_group
from ..topics import TopicManager
from .catalog import CLASSIC, CONSUMER, GroupCatalog
from .classic_service import ClassicGroupService
from .committed_offsets import CommittedOffsets
from .offset_files import group_id_problem
from .membership_api import (
    consumer_group_heartbeat,
    heartbeat,
    join_group,
    leave_group,
    sync_group,
)
from .offset_delete import offset_delete
from .offsets_api import offset_commit, offset_fetch
from .requests import (
    GROUP_KEY_TYPE,
    Coordinator,
    Coordinators,
    DeleteGroupsRequest,
    Described,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    GroupsListed,
    ListGroupsRequest,
)
from .service import GroupService

log = logging.getLogger("tslog.broker.groups")

NOTHING_DENIED: frozenset[str] = frozenset()
GROUP_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
_NONE = int(ErrorCode.NONE)


def placement(groups: GroupService, cluster: ClusterView) -> ErrorCode:
    """NONE if this broker coordinates the groups now; NOT_COORDINATOR if another broker is
    the controller (or none is); COORDINATOR_NOT_AVAILABLE while ours is still loading."""
    if cluster.controller_id() != cluster.node_id:
        return ErrorCode.NOT_COORDINATOR
    if not groups.active:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


class GroupApi:
    """The group APIs on this broker's coordinators, offsets, topics and cluster view.

    OffsetCommit and OffsetFetch are ``offsets_api``'s functions themselves, Kafka's
    OffsetDelete ``offset_delete``'s, and membership (ConsumerGroupHeartbeat, Kafka's
    JoinGroup, SyncGroup, Heartbeat, LeaveGroup) ``membership_api``'s, bound here."""

    __slots__ = ("groups", "classic", "offsets", "catalog", "cluster", "topics")

    def __init__(self, groups: GroupService, classic: ClassicGroupService,
                 offsets: CommittedOffsets, catalog: GroupCatalog, cluster: ClusterView,
                 topics: TopicManager) -> None:
        self.groups = groups  # tslog's coordinator (KIP-848)
        self.classic = classic  # Kafka's classic groups
        self.offsets = offsets  # every group's committed offsets
        self.catalog = catalog  # the one view of every group
        self.cluster = cluster  # who the controller is, and where
        self.topics = topics  # which partitions exist (a commit must name one)

    offset_commit = offset_commit
    offset_fetch = offset_fetch
    offset_delete = offset_delete
    consumer_group_heartbeat = consumer_group_heartbeat
    join_group = join_group
    sync_group = sync_group
    heartbeat = heartbeat
    leave_group = leave_group

    def placement(self) -> ErrorCode:
        return placement(self.groups, self.cluster)

    def find_coordinator(self, request: FindCoordinatorRequest,
                         denied: frozenset = NOTHING_DENIED) -> Coordinators:
        """The controller for each key (only groups have one here: a transactional id is
        INVALID_REQUEST)."""
        if request.key_type != GROUP_KEY_TYPE:
            return Coordinators([Coordinator(int(ErrorCode.INVALID_REQUEST), -1)
                                 for _ in request.keys], self.cluster)
        controller = self.cluster.controller_id()
        return Coordinators([
            Coordinator(GROUP_DENIED if key in denied else
                        int(ErrorCode.INVALID_GROUP_ID) if group_id_problem(key) else _NONE,
                        controller) for key in request.keys], self.cluster)

    def list_groups(self, request: ListGroupsRequest,
                    visible=None) -> GroupsListed:
        """Every group the catalog knows, sorted by id, kept by ``states`` and ``kinds``
        (a group of tslog's protocol is CONSUMER, any other CLASSIC); ``visible`` (from the
        gate) hides the groups the principal may not describe."""
        code = self.placement()
        if code:
            return GroupsListed(int(code), [])
        states, kinds = request.states, request.kinds
        return GroupsListed(_NONE, [
            view for view in self.catalog.list_groups()
            if (states is None or view.state in states)
            and (kinds is None or (CONSUMER if view.kind == CONSUMER else CLASSIC) in kinds)
            and (visible is None or visible(view.group_id))])

    def describe_groups(self, request: DescribeGroupsRequest,
                        denied: frozenset = NOTHING_DENIED) -> list[Described]:
        """Each group as the catalog sees it (the view ListGroups lists): GROUP_ID_NOT_FOUND
        for a group it does not know."""
        placement = int(self.placement())
        results = []
        for group_id in request.groups:
            if group_id in denied:
                results.append(Described(GROUP_DENIED, None))
            elif placement:
                results.append(Described(placement, None))
            else:
                view = self.catalog.describe(group_id)
                results.append(Described(int(ErrorCode.GROUP_ID_NOT_FOUND) if view is None
                                         else _NONE, view))
        return results

    async def delete_groups(self, request: DeleteGroupsRequest,
                            denied: frozenset = NOTHING_DENIED) -> list[int]:
        """Each group deleted in turn (``delete_group``), its error code in order."""
        placement = int(self.placement())
        codes = []
        for group_id in request.groups:
            if group_id in denied:
                codes.append(GROUP_DENIED)
            elif placement:
                codes.append(placement)
            else:
                codes.append(int(await self.delete_group(group_id)))
        return codes

    async def delete_group(self, group_id: str) -> ErrorCode:
        """Delete the group's coordinator state, then all its committed offsets (NONE);
        NON_EMPTY_GROUP while it has members, of either protocol, and GROUP_ID_NOT_FOUND if
        the catalog does not know it, both changing nothing. The group's offset lock is held
        throughout, so a commit waits and lands after the delete, never in between. A failed
        offset delete answers KAFKA_STORAGE_ERROR; the group then has offsets only, and a
        retry deletes them. An empty classic group is forgotten last, so it is listed no
        more."""
        async with self.offsets.group_lock(group_id):
            view = self.catalog.describe(group_id)
            if view is not None and view.kind == CLASSIC and view.members:
                return ErrorCode.NON_EMPTY_GROUP
            code = await self.groups.delete_group(group_id)
            if code is ErrorCode.GROUP_ID_NOT_FOUND and view is not None:
                code = ErrorCode.NONE  # a classic or offsets-only group: nothing of tslog's
            if code is not ErrorCode.NONE:
                return code
            if self.offsets.has_offsets(group_id):
                try:
                    await self.offsets.forget_group(group_id)
                except OSError as exc:
                    log.error("deleting the committed offsets of group %r failed: %r",
                              group_id, exc)
                    return ErrorCode.KAFKA_STORAGE_ERROR
            self.classic.forget(group_id)
            forget_group(group_id)
            return ErrorCode.NONE
