"""What every API needs from the ACLs, and the verdict for one request (Kafka's mapping).

The typed services are judged by their own wrappers (``TYPED_GATES``): the data service's
Produce, Fetch, ListOffsets and Metadata by ``GatedData`` (below; Metadata's listing of
every topic hides the topics the principal may not describe, and a topic asked by name is
answered TOPIC_AUTHORIZATION_FAILED, so a name tells nothing about whether it exists), the
group service's (every group API: OffsetCommit, OffsetFetch, FindCoordinator, ListGroups,
DeleteGroups, ConsumerGroupHeartbeat, ConsumerGroupDescribe) by ``GatedGroups``
(``group_gate.py``; ListGroups hides the groups it may not describe), the partition admin
APIs (DeleteRecords, InitProducerId, OffsetForLeaderEpoch, ElectLeaders,
Alter/ListPartitionReassignments, OffsetsAtTimes, and the Kafka port's DescribeLogDirs) by
``GatedPartitionAdmin`` (``partition_admin_gate.py``), and the topic admin APIs
(Create/DeleteTopics, CreatePartitions, Describe/AlterConfigs and the Kafka port's
IncrementalAlterConfigs) by ``GatedTopicAdmin`` (``topic_admin_gate.py``). Each wrapper
answers a denied part of a request with the typed code in place, does nothing else for it,
and counts the request once in ``tslog_denied_requests_total``.

The rest (``RULES``) are whole-request rules, one per api key: the login APIs and
ApiVersions need nothing; the ACL and SCRAM APIs need Describe or Alter on the cluster. A
rule returns None (allowed: the handler runs) or the denied request's answer, with
CLUSTER_AUTHORIZATION_FAILED (the handler never runs).

Why bound per connection (``RequestGate.bind``): the connection calls ``dispatch[key](body)``
either way; with the authorizer off it gets the plain table and pays nothing at all.
"""

from __future__ import annotations

from types import MethodType
from typing import Any, Callable

from tslog.protocol.errors import ErrorCode

from ..data.requests import RequestDenied
from ..metrics import security_metrics
from . import ANONYMOUS
from .acl import CLUSTER_NAME, Authorizer
from .connection_authorizer import ConnectionAuthorizer
from .group_gate import GROUP_OPERATIONS, GatedGroups
from .partition_admin_gate import GatedPartitionAdmin
from .topic_admin_gate import GatedTopicAdmin

__all__ = ["ANONYMOUS", "DATA_KEYS", "GROUP_OPERATIONS", "RULES", "TYPED_GATES", "GatedData",
           "GatedGroups", "GatedPartitionAdmin", "GatedTopicAdmin", "RequestGate",
           "ConnectionAuthorizer", "decide"]

CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


Rule = Callable[[Authorizer, str, dict], Any]


def _cluster_denied(principal: str, operation: str) -> dict:
    return {"error_code": CLUSTER_DENIED,
            "error_message": f"{principal} is not allowed to {operation} the cluster"}


def _cluster(operation: str) -> Rule:
    def rule(authz: Authorizer, principal: str, body: dict):
        if authz.authorize(principal, operation, "cluster", CLUSTER_NAME):
            return None
        return _cluster_denied(principal, operation)
    return rule


def _nothing(authz: Authorizer, principal: str, body: dict):
    return None


# api key (a number: some APIs are added by other parts of the product) -> its rule. The
# typed services' keys (``TYPED_GATES``) are judged typed instead, by their wrappers.
RULES: dict[int, Rule] = {
    17: _nothing,                                   # SaslHandshake
    18: _nothing,                                   # ApiVersions
    29: _cluster("Describe"),                       # DescribeAcls
    30: _cluster("Alter"),                          # CreateAcls
    31: _cluster("Alter"),                          # DeleteAcls
    36: _nothing,                                   # SaslAuthenticate
    50: _cluster("Describe"),                       # DescribeUserScramCredentials
    51: _cluster("Alter"),                          # AlterUserScramCredentials
}


def decide(authz: Authorizer, api_key: int, principal: str, body: dict,
           handler: Callable[[dict], Any]):
    """The request's answer: the handler's (maybe awaitable), or the rule's refusal."""
    refusal = RULES[api_key](authz, principal, body)
    if refusal is None:
        return handler(body)
    security_metrics.denied(principal, api_key)
    return refusal


class _Gated:
    """One api key's handler behind the gate, for one connection."""

    __slots__ = ("authz", "api_key", "handler", "connection")

    def __init__(self, authz: Authorizer, api_key: int, handler, connection) -> None:
        self.authz = ConnectionAuthorizer(authz, connection)
        self.api_key = api_key
        self.handler = handler
        self.connection = connection

    def __call__(self, body: dict):
        return decide(self.authz, self.api_key, self.connection.principal, body, self.handler)


class GatedData:
    """The data service (``broker/data``) as one connection's principal may use it, for
    both front doors: the same methods, each judging the typed request first.

    Produce needs Write on each topic, Fetch Read (a follower's, ClusterAction on the
    cluster), ListOffsets and Metadata Describe. A denied topic's partitions are answered
    TOPIC_AUTHORIZATION_FAILED by the service, which does nothing else for them, so a
    denied part of a request changes nothing and the rest is served."""

    __slots__ = ("data", "authz", "connection")

    def __init__(self, authz: Authorizer, data, connection) -> None:
        self.data = data
        self.authz = ConnectionAuthorizer(authz, connection)
        self.connection = connection

    def produce(self, request):
        return self.data.produce(request,
                                 self.authz.denied_topics("Write", request.partitions, 0))

    def fetch(self, request):
        if request.replica_id < 0:
            return self.data.fetch(request,
                                   self.authz.denied_topics("Read", request.partitions, 1))
        principal = self.connection.principal
        if self.authz.authorize(principal, "ClusterAction", "cluster", CLUSTER_NAME):
            return self.data.fetch(request)
        security_metrics.denied(principal, 1)
        return RequestDenied(**_cluster_denied(principal, "ClusterAction"))

    def list_offsets(self, request):
        return self.data.list_offsets(request,
                                      self.authz.denied_topics("Describe", request.queries, 2))

    def metadata(self, request):
        """Describe on each topic: a listing of every topic hides the others (not counted
        as a denial), a topic asked by name is answered TOPIC_AUTHORIZATION_FAILED, so its
        name tells nothing about whether it exists."""
        principal = self.connection.principal
        authorize = self.authz.authorize

        def describable(name: str) -> bool:
            return authorize(principal, "Describe", "topic", name)
        if request.topics is None:
            return self.data.metadata(request, visible=describable)
        return self.data.metadata(request, self.authz.denied_topics(
            "Describe", [(name,) for name in request.topics], 3))


# The api keys whose native handlers are bound to a typed service (``handler.__self__``),
# and the wrapper that judges that service's typed requests for one connection.
TYPED_GATES: dict[int, type] = {
    0: GatedData, 1: GatedData, 2: GatedData, 3: GatedData,  # Produce, Fetch, ListOffsets,
    # Metadata; the group service's: OffsetCommit, OffsetFetch, FindCoordinator, ListGroups,
    # DeleteGroups, ConsumerGroupHeartbeat, ConsumerGroupDescribe (``group_gate.py``)
    8: GatedGroups, 9: GatedGroups, 10: GatedGroups, 16: GatedGroups, 42: GatedGroups,
    68: GatedGroups, 69: GatedGroups,
    # DeleteRecords, InitProducerId, OffsetForLeaderEpoch, ElectLeaders, Alter/List-
    # PartitionReassignments, OffsetsAtTimes (and the Kafka port's DescribeLogDirs, 35)
    21: GatedPartitionAdmin, 22: GatedPartitionAdmin, 23: GatedPartitionAdmin,
    43: GatedPartitionAdmin, 45: GatedPartitionAdmin, 46: GatedPartitionAdmin,
    1000: GatedPartitionAdmin,
    # CreateTopics, DeleteTopics, DescribeConfigs, AlterConfigs, CreatePartitions (and the
    # Kafka port's IncrementalAlterConfigs, 44)
    19: GatedTopicAdmin, 20: GatedTopicAdmin, 32: GatedTopicAdmin, 33: GatedTopicAdmin,
    37: GatedTopicAdmin,
}
DATA_KEYS = frozenset(key for key, wrapper in TYPED_GATES.items() if wrapper is GatedData)


class RequestGate:
    """The broker's authorizer, put in front of a connection's handlers."""

    def __init__(self, authorizer: Authorizer) -> None:
        self.authorizer = authorizer

    def bind(self, dispatch: dict, connection) -> dict:
        """``dispatch`` with every handler asking first, for ``connection.principal`` as it
        is at each request (authentication may change it after the connection opened).
        A typed service's handlers (``TYPED_GATES``, each bound to its service) are bound
        to the connection's wrapper of that service instead, which judges typed requests;
        the rest go through their ``RULES``."""
        gated, wrapped = {}, {}
        for key, handler in dispatch.items():
            wrapper = TYPED_GATES.get(int(key))
            if wrapper is None:
                gated[key] = _Gated(self.authorizer, int(key), handler, connection)
                continue
            if wrapper not in wrapped:
                wrapped[wrapper] = wrapper(self.authorizer, handler.__self__, connection)
            gated[key] = MethodType(handler.__func__, wrapped[wrapper])
        return gated

    def wrap(self, wrapper: type, service, connection):
        """``service`` judged by ``wrapper`` (``GatedData`` ...) for ``connection``'s
        principal: what a Kafka connection's adapters call."""
        return wrapper(self.authorizer, service, connection)

