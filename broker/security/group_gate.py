"""``GatedGroups``: the group service (``groups/api.py``) as one connection's principal may
use it, for both front doors.

The same methods as ``GroupApi``, each judging the typed request first, by Kafka's mapping
of the group APIs to operations (``GROUP_OPERATIONS``, below): Describe on the group
for FindCoordinator and describe, Delete for DeleteGroups, Read for OffsetCommit (and Read
on each topic), Describe for OffsetFetch (and on each topic). A denied group is passed to
the service, which answers it GROUP_AUTHORIZATION_FAILED and does nothing else for it, so a
denied part of a request changes nothing and the rest is served; a commit or fetch of a
denied group never reaches the service, and a denied topic's partitions are answered
TOPIC_AUTHORIZATION_FAILED. Kafka's OffsetDelete (its port only) needs Delete on the group
and Read on each topic. Each request with a
denied group counts once in ``tslog_denied_requests_total``, under the API that asked.

ListGroups lists everything to a principal with Describe on the cluster; to any other it
hides the groups it may not describe, and OffsetFetch asked for every committed offset
hides the topics it may not describe (a listing that only hides is not counted as a
denial, as Metadata's listing of every topic).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from ..groups.requests import (
    GROUP_KEY_TYPE,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetsDeleted,
    OffsetsFetched,
)
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


class GatedGroups:
    """One connection's view of the group service, judged by the connection's principal
    as it is at each request (a login may change it after the connection opened)."""

    __slots__ = ("groups", "authz", "connection")

    def __init__(self, authz: Authorizer, groups, connection) -> None:
        self.groups = groups
        self.authz = ConnectionAuthorizer(authz, connection)
        self.connection = connection

    def _denied(self, names, api_key: int) -> frozenset:
        """The groups of ``names`` the principal may not use for ``api_key`` (its operation
        in ``GROUP_OPERATIONS``); counted as one denial of the request."""
        operation = GROUP_OPERATIONS[api_key]
        principal = self.connection.principal
        authorize = self.authz.authorize
        denied = frozenset(name for name in set(names)
                           if not authorize(principal, operation, "group", name))
        if denied:
            security_metrics.denied(principal, api_key)
        return denied

    def find_coordinator(self, request: FindCoordinatorRequest):
        if request.key_type != GROUP_KEY_TYPE:  # refused by the service whoever asks
            return self.groups.find_coordinator(request)
        return self.groups.find_coordinator(request, self._denied(request.keys, 10))

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
                                           self._denied(request.groups, request.api_key))

    def delete_groups(self, request: DeleteGroupsRequest):
        return self.groups.delete_groups(request, self._denied(request.groups, 42))

    def _may_use(self, group_id: str, api_key: int) -> bool:
        """Whether the principal may use the group for ``api_key``; a refusal is counted
        as the request's one denial."""
        principal = self.connection.principal
        if self.authz.authorize(principal, GROUP_OPERATIONS[api_key], "group", group_id):
            return True
        security_metrics.denied(principal, api_key)
        return False

    def _denied_topics(self, operation: str, partitions, api_key: int) -> frozenset:
        """The topics of ``partitions`` (tuples whose first field is the topic) the principal
        may not ``operation``; counted as one denial of the request."""
        principal = self.connection.principal
        authorize = self.authz.authorize
        denied = frozenset(topic for topic in {entry[0] for entry in partitions}
                           if not authorize(principal, operation, "topic", topic))
        if denied:
            security_metrics.denied(principal, api_key)
        return denied

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
            return _refused_delete()
        return self.groups.offset_delete(
            request, self._denied_topics("Read", request.partitions, 47))


async def _refused_delete() -> OffsetsDeleted:
    return OffsetsDeleted(_GROUP_DENIED, [])
