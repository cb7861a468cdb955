"""``GatedPartitionAdmin``: the partition admin service (``broker/admin/partitions.py``) as
one connection's principal may use it, for both front doors.

Kafka's operation per API: DeleteRecords needs Delete on each topic; OffsetsAtTimes, and a
client's OffsetForLeaderEpoch, Describe on each topic; a follower's OffsetForLeaderEpoch
(``replica_id`` >= 0) ClusterAction on the cluster; InitProducerId Write on any topic or
ClusterAction; ElectLeaders and AlterPartitionReassignments Alter on the cluster;
ListPartitionReassignments and DescribeLogDirs Describe on the cluster.

A denied topic is passed to the service, which answers its partitions
TOPIC_AUTHORIZATION_FAILED and does nothing else for them, so the allowed rest is served. A
denied cluster operation never reaches the service: the answer is a ``RequestDenied``
(InitProducerId's, a ``ProducerId`` with CLUSTER_AUTHORIZATION_FAILED, as its response has
no message). Each denied request is counted once, whichever port it came in.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ..admin.partition_requests import ProducerId
from ..data.requests import RequestDenied
from ..metrics import security_metrics
from .acl import CLUSTER_NAME, Authorizer
from .connection_authorizer import ConnectionAuthorizer

_CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
_NO_PRODUCER_ID = ProducerId(_CLUSTER_DENIED, -1, -1)
_DELETE_RECORDS = int(ApiKey.DELETE_RECORDS)
_INIT_PRODUCER_ID = int(ApiKey.INIT_PRODUCER_ID)
_OFFSET_FOR_LEADER_EPOCH = int(ApiKey.OFFSET_FOR_LEADER_EPOCH)
_ELECT_LEADERS = int(ApiKey.ELECT_LEADERS)
_ALTER_REASSIGNMENTS = int(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
_LIST_REASSIGNMENTS = int(ApiKey.LIST_PARTITION_REASSIGNMENTS)
_OFFSETS_AT_TIMES = int(ApiKey.OFFSETS_AT_TIMES)
_DESCRIBE_LOG_DIRS = 35  # Kafka's port only: tslog's protocol has no twin


class GatedPartitionAdmin:
    __slots__ = ("admin", "authz", "connection")

    def __init__(self, authz: Authorizer, admin, connection) -> None:
        self.admin = admin
        self.authz = ConnectionAuthorizer(authz, connection)
        self.connection = connection

    def _cluster_refusal(self, operation: str, api_key: int) -> RequestDenied | None:
        """None when the principal may ``operation`` the cluster; else the refusal,
        counted."""
        principal = self.connection.principal
        if self.authz.authorize(principal, operation, "cluster", CLUSTER_NAME):
            return None
        security_metrics.denied(principal, api_key)
        return RequestDenied(_CLUSTER_DENIED,
                             f"{principal} is not allowed to {operation} the cluster")

    def delete_records(self, request):
        return self.admin.delete_records(request, self.authz.denied_topics(
            "Delete", request.partitions, _DELETE_RECORDS))

    def init_producer_id(self, request):
        principal = self.connection.principal
        if (self.authz.authorize_any(principal, "Write", "topic")
                or self.authz.authorize(principal, "ClusterAction", "cluster", CLUSTER_NAME)):
            return self.admin.init_producer_id(request)
        security_metrics.denied(principal, _INIT_PRODUCER_ID)
        return _NO_PRODUCER_ID

    def offset_for_leader_epoch(self, request):
        if request.replica_id >= 0:
            return (self._cluster_refusal("ClusterAction", _OFFSET_FOR_LEADER_EPOCH)
                    or self.admin.offset_for_leader_epoch(request))
        return self.admin.offset_for_leader_epoch(request, self.authz.denied_topics(
            "Describe", request.queries, _OFFSET_FOR_LEADER_EPOCH))

    def offsets_at_times(self, request):
        return self.admin.offsets_at_times(request, self.authz.denied_topics(
            "Describe", request.queries, _OFFSETS_AT_TIMES))

    def alter_reassignments(self, request):
        return (self._cluster_refusal("Alter", _ALTER_REASSIGNMENTS)
                or self.admin.alter_reassignments(request))

    def list_reassignments(self, request):
        return (self._cluster_refusal("Describe", _LIST_REASSIGNMENTS)
                or self.admin.list_reassignments(request))

    def elect_leaders(self, request):
        return (self._cluster_refusal("Alter", _ELECT_LEADERS)
                or self.admin.elect_leaders(request))

    def describe_log_dirs(self, request):
        return (self._cluster_refusal("Describe", _DESCRIBE_LOG_DIRS)
                or self.admin.describe_log_dirs(request))
