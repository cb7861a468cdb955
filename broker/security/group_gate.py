"""``GatedGroups``: the group service (``groups/api.py``) as one connection's principal may
use it, for both front doors.

The same methods as ``GroupApi``, each judging the typed request first, by Kafka's mapping
of the group APIs to operations (``GROUP_OPERATIONS``, below):

- FindCoordinator and describe: Describe on each group; DeleteGroups: Delete on each. A
  denied group is passed to the service, which answers it GROUP_AUTHORIZATION_FAILED and
  does nothing else for it, and the rest is served.
- OffsetCommit: Read on the group and on each topic; OffsetFetch: Describe on the group and
  on each topic; Kafka's OffsetDelete (its port only): Delete on the group, Read on each
  topic. A denied group is refused whole before the service is called; a denied topic is
  passed to it, which answers its partitions TOPIC_AUTHORIZATION_FAILED and does nothing
  else for them.
- Membership: Read on the group (tslog's ConsumerGroupHeartbeat also Describe on each
  subscribed topic, else TOPIC_AUTHORIZATION_FAILED; Kafka's JoinGroup, SyncGroup, Heartbeat
  and LeaveGroup nothing more), refused whole before any coordinator is asked.

So a denied part of a request changes nothing. Each request with a denial counts once in
``tslog_denied_requests_total``, under the API that asked. Listings only hide: ListGroups
lists everything to a principal with Describe on the cluster and, to any other, leaves out
the groups it may not describe; OffsetFetch asked for every committed offset leaves out the
topics it may not describe (neither is counted as a denial, as Metadata's listing of every
topic is not).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from ..groups.classic_views import JoinResponse, SyncResponse
from ..groups.requests import (
    GROUP_KEY_TYPE,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    Left,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetsDeleted,
    OffsetsFetched,
    SyncGroupRequest,
)
from ..groups.views import HeartbeatResponse
from ..metrics import security_metrics
from .acl import CLUSTER_NAME, Authorizer
from .connection_authorizer import ConnectionAuthorizer

# Kafka's mapping of the group APIs to the operation each needs on its group, for both
# ports: tslog's keys and the Kafka port's own (JoinGroup 11 ... DescribeGroups 15,
# OffsetDelete 47), so one table says what a group request needs whichever door it came in.
GROUP_OPERATIONS: dict[int, str] = {
    8: "Read",       # OffsetCommit
    9: "Describe",   # OffsetFetch
    10: "Describe",  # FindCoordinator
    11: "Read",      # JoinGroup (Kafka port)
    12: "Read",      # Heartbeat (Kafka port)
    13: "Read",      # LeaveGroup (Kafka port)
    14: "Read",      # SyncGroup (Kafka port)
    15: "Describe",  # DescribeGroups (Kafka port)
    16: "Describe",  # ListGroups (hides the groups it may not describe)
    42: "Delete",    # DeleteGroups
    47: "Delete",    # OffsetDelete (Kafka port)
    68: "Read",      # ConsumerGroupHeartbeat
    69: "Describe",  # ConsumerGroupDescribe
}


_GROUP_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
_TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)


class GatedGroups:
    """One connection's view of the group service, judged by the connection's principal
    as it is at each request (a login may change it after the connection opened)."""

    __slots__ = ("groups", "authz", "connection")

    def __init__(self, authz: Authorizer, groups, connection) -> None:
        self.groups = groups
        self.authz = ConnectionAuthorizer(authz, connection)
        self.connection = connection

    def _denied(self, kind: str, operation: str, names, api_key: int) -> frozenset:
        """The ``names`` (groups or topics, by ``kind``) the principal may not
        ``operation``; counted as one denial of the request."""
        principal = self.connection.principal
        authorize = self.authz.authorize
        denied = frozenset(name for name in set(names)
                           if not authorize(principal, operation, kind, name))
        if denied:
            security_metrics.denied(principal, api_key)
        return denied

    def _denied_groups(self, names, api_key: int) -> frozenset:
        return self._denied("group", GROUP_OPERATIONS[api_key], names, api_key)

    def _denied_topics(self, operation: str, partitions, api_key: int) -> frozenset:
        """The topics of ``partitions`` (tuples whose first field is the topic) denied."""
        return self._denied("topic", operation, [entry[0] for entry in partitions], api_key)

    def _may_use(self, group_id: str, api_key: int) -> bool:
        """Whether the principal may use the group for ``api_key``; a refusal is counted
        as the request's one denial."""
        return not self._denied_groups((group_id,), api_key)

    def find_coordinator(self, request: FindCoordinatorRequest):
        if request.key_type != GROUP_KEY_TYPE:  # refused by the service whoever asks
            return self.groups.find_coordinator(request)
        return self.groups.find_coordinator(request, self._denied_groups(request.keys, 10))

    def list_groups(self, request: ListGroupsRequest):
        principal = self.connection.principal
        authorize = self.authz.authorize
        if authorize(principal, "Describe", "cluster", CLUSTER_NAME):
            return self.groups.list_groups(request)
        operation = GROUP_OPERATIONS[16]
        return self.groups.list_groups(
            request, visible=lambda name: authorize(principal, operation, "group", name))

    def describe_groups(self, request: DescribeGroupsRequest):
        return self.groups.describe_groups(request,
                                           self._denied_groups(request.groups, request.api_key))

    def delete_groups(self, request: DeleteGroupsRequest):
        return self.groups.delete_groups(request, self._denied_groups(request.groups, 42))

    def offset_commit(self, request: OffsetCommitRequest):
        """Read on the group, then Read on each topic. A denied group stores nothing and
        answers GROUP_AUTHORIZATION_FAILED on every partition."""
        if not self._may_use(request.group_id, 8):
            return [_GROUP_DENIED] * len(request.partitions)
        return self.groups.offset_commit(
            request, self._denied_topics("Read", request.partitions, 8))

    def offset_fetch(self, request: OffsetFetchRequest):
        """Describe on the group, then on each topic: asked for every committed offset, the
        topics the principal may not describe are left out (not counted as a denial)."""
        principal = self.connection.principal
        if not self._may_use(request.group_id, 9):
            return OffsetsFetched(_GROUP_DENIED, [], f"{principal} is not allowed to "
                                  f"Describe group {request.group_id!r}")
        if request.partitions is None:
            authorize = self.authz.authorize
            return self.groups.offset_fetch(request, visible=lambda topic: authorize(
                principal, "Describe", "topic", topic))
        return self.groups.offset_fetch(
            request, self._denied_topics("Describe", request.partitions, 9))

    def offset_delete(self, request: OffsetDeleteRequest):
        """Kafka's OffsetDelete: Delete on the group (else the whole request is refused and
        nothing is deleted), then Read on each topic."""
        if not self._may_use(request.group_id, 47):
            return _answered(OffsetsDeleted(_GROUP_DENIED, []))
        return self.groups.offset_delete(
            request, self._denied_topics("Read", request.partitions, 47))

    def consumer_group_heartbeat(self, request: ConsumerGroupHeartbeatRequest):
        """Read on the group, and Describe on every subscribed topic (Kafka's KIP-848
        check): a refused heartbeat changes nothing of the group."""
        code = 0
        if not self._may_use(request.group_id, 68):
            code = _GROUP_DENIED
        elif self._denied_topics("Describe", [(name,) for name in
                                              request.subscribed_topics or ()], 68):
            code = _TOPIC_DENIED
        if not code:
            return self.groups.consumer_group_heartbeat(request)
        return _answered(HeartbeatResponse(code, request.member_id, request.member_epoch, 0,
                                           None))

    def join_group(self, request: JoinGroupRequest):
        if self._may_use(request.group_id, 11):
            return self.groups.join_group(request)
        return _answered(JoinResponse(_GROUP_DENIED, request.member_id))

    def sync_group(self, request: SyncGroupRequest):
        if self._may_use(request.group_id, 14):
            return self.groups.sync_group(request)
        return _answered(SyncResponse(_GROUP_DENIED))

    def heartbeat(self, request: HeartbeatRequest) -> int:
        if self._may_use(request.group_id, 12):
            return self.groups.heartbeat(request)
        return _GROUP_DENIED

    def leave_group(self, request: LeaveGroupRequest) -> Left:
        if self._may_use(request.group_id, 13):
            return self.groups.leave_group(request)
        return Left(_GROUP_DENIED, [])


async def _answered(answer):
    """A refusal where the service answers by an awaitable: the caller awaits either."""
    return answer
