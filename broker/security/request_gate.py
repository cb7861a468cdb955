"""What every API needs from the ACLs, and the verdict for one request (Kafka's mapping).

A rule per api key reads the request body and the connection's principal and returns one of:

- ``None``: allowed, run the handler on the body as it is;
- a dict: the whole request is denied; this is its answer and the handler never runs
  (cluster-level APIs: CLUSTER_AUTHORIZATION_FAILED);
- a ``Partial``: some topics or partitions are denied. The handler runs on a body without
  them (or not at all when nothing is left) and the denied entries are merged into its
  response, with TOPIC_AUTHORIZATION_FAILED, in the shape the response schema requires. So a
  denied part of a request changes nothing.

The typed services are judged by their own wrappers (``TYPED_GATES``): the data service's
Produce, Fetch, ListOffsets and Metadata by ``GatedData`` (below; Metadata's listing of
every topic hides the topics the principal may not describe, and a topic asked by name is
answered TOPIC_AUTHORIZATION_FAILED, so a name tells nothing about whether it exists), the
group service's (every group API: OffsetCommit, OffsetFetch, FindCoordinator, ListGroups,
DeleteGroups, ConsumerGroupHeartbeat, ConsumerGroupDescribe) by ``GatedGroups``
(``group_gate.py``; ListGroups hides the groups it may not describe), and the partition
admin APIs (DeleteRecords, InitProducerId, OffsetForLeaderEpoch, ElectLeaders,
Alter/ListPartitionReassignments, OffsetsAtTimes, and the Kafka port's DescribeLogDirs) by
``GatedPartitionAdmin`` (``partition_admin_gate.py``).

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

__all__ = ["ANONYMOUS", "DATA_KEYS", "GROUP_OPERATIONS", "RULES", "TYPED_GATES", "GatedData",
           "GatedGroups", "GatedPartitionAdmin", "RequestGate", "ConnectionAuthorizer",
           "decide"]

TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


class Partial:
    """Run the handler on ``body`` (None: do not run it, start from ``empty``), then
    ``merge`` the denied entries into its response."""

    __slots__ = ("body", "merge", "empty", "denied")

    def __init__(self, body: dict | None, merge: Callable[[dict], dict], empty: dict,
                 denied: bool = True) -> None:
        self.body = body
        self.merge = merge
        self.empty = empty
        self.denied = denied  # False: a listing that only hides (not counted as a denial)


Rule = Callable[[Authorizer, str, dict], Any]


def _cluster_denied(principal: str, operation: str) -> dict:
    return {"error_code": CLUSTER_DENIED,
            "error_message": f"{principal} is not allowed to {operation} the cluster"}


def _appending(key: str, entries: list) -> Callable[[dict], dict]:
    def merge(response: dict) -> dict:
        if response is None or key not in response:  # acks = 0, or a bare error body
            return response
        return {**response, key: response[key] + entries}
    return merge


def _split(items: list, name_of, allowed) -> tuple[list, list]:
    kept, denied = [], []
    for item in items:
        (kept if allowed(name_of(item)) else denied).append(item)
    return kept, denied


def _topic_partitions(operation: str, denied_partition: Callable[[Any], dict],
                      list_key: str = "topics") -> Rule:
    """A per-partition API (``[{"topic", "partitions": [...]}]``)."""
    def rule(authz: Authorizer, principal: str, body: dict):
        authorize = authz.authorize
        for topic in body[list_key]:  # the common case first: every topic allowed
            if not authorize(principal, operation, "topic", topic["topic"]):
                break
        else:
            return None
        kept, denied = _split(body[list_key], lambda t: t["topic"],
                              lambda name: authz.authorize(principal, operation, "topic", name))
        if not denied:
            return None
        entries = [{"topic": t["topic"], "partitions": [denied_partition(p)
                                                        for p in t["partitions"]]}
                   for t in denied]
        return Partial({**body, list_key: kept} if kept else None,
                       _appending("topics", entries), {"topics": []})
    return rule


def _named(operation: str, resource_type: str, request_key: str, response_key: str,
           denied_entry: Callable[[str, str], dict], name_of=lambda item: item) -> Rule:
    """An API over a list of named topics or groups, one result entry per name."""
    def rule(authz: Authorizer, principal: str, body: dict):
        kept, denied = _split(body[request_key], name_of, lambda name: authz.authorize(
            principal, operation, resource_type, name))
        if not denied:
            return None
        entries = [denied_entry(principal, item) for item in denied]
        return Partial({**body, request_key: kept} if kept else None,
                       _appending(response_key, entries), {response_key: []})
    return rule


def _message(principal: str, operation: str, kind: str, name: str) -> str:
    return f"{principal} is not allowed to {operation} {kind} {name!r}"


def _cluster(operation: str) -> Rule:
    def rule(authz: Authorizer, principal: str, body: dict):
        if authz.authorize(principal, operation, "cluster", CLUSTER_NAME):
            return None
        return _cluster_denied(principal, operation)
    return rule


def _nothing(authz: Authorizer, principal: str, body: dict):
    return None


# -- the per-API rules -------------------------------------------------------------------


def _topic_result(operation: str) -> Callable[[str, dict], dict]:
    return lambda principal, t: {"topic": t["topic"], "error_code": TOPIC_DENIED,
                                 "error_message": _message(principal, operation, "topic",
                                                           t["topic"])}


_create_topics_each = _named("Create", "topic", "topics", "topics", _topic_result("Create"),
                             lambda t: t["topic"])


def _create_topics(authz: Authorizer, principal: str, body: dict):
    if authz.authorize(principal, "Create", "cluster", CLUSTER_NAME):
        return None
    return _create_topics_each(authz, principal, body)


_delete_topics = _named("Delete", "topic", "topics", "topics",
                        lambda principal, name: {"topic": name, "error_code": TOPIC_DENIED})
_create_partitions = _named("Alter", "topic", "topics", "topics", _topic_result("Alter"),
                            lambda t: t["topic"])


def _config_rule(operation: str, describe: bool) -> Rule:
    """Describe/AlterConfigs: a topic needs the operation on it; a broker, on the cluster."""
    def rule(authz: Authorizer, principal: str, body: dict):
        def allowed(resource: dict) -> bool:
            if resource["type"] == "topic":
                return authz.authorize(principal, operation, "topic", resource["name"])
            return authz.authorize(principal, operation, "cluster", CLUSTER_NAME)
        kept, denied = _split(body["resources"], lambda r: r, allowed)
        if not denied:
            return None
        entries = []
        for r in denied:
            topic = r["type"] == "topic"
            entry = {"type": r["type"], "name": r["name"],
                     "error_code": TOPIC_DENIED if topic else CLUSTER_DENIED,
                     "error_message": _message(principal, operation,
                                               "topic" if topic else "broker", r["name"])}
            if describe:
                entry["configs"] = []
            entries.append(entry)
        return Partial({**body, "resources": kept} if kept else None,
                       _appending("resources", entries), {"resources": []})
    return rule


# api key (a number: some APIs are added by other parts of the product) -> its rule. The
# typed services' keys (``TYPED_GATES``) are judged typed instead, by their wrappers.
RULES: dict[int, Rule] = {
    17: _nothing,                                   # SaslHandshake
    18: _nothing,                                   # ApiVersions
    19: _create_topics,                             # CreateTopics: Create cluster or topic
    20: _delete_topics,                             # DeleteTopics: Delete topic
    29: _cluster("Describe"),                       # DescribeAcls
    30: _cluster("Alter"),                          # CreateAcls
    31: _cluster("Alter"),                          # DeleteAcls
    32: _config_rule("DescribeConfigs", True),      # DescribeConfigs
    33: _config_rule("AlterConfigs", False),        # AlterConfigs
    36: _nothing,                                   # SaslAuthenticate
    37: _create_partitions,                         # CreatePartitions: Alter topic
    50: _cluster("Describe"),                       # DescribeUserScramCredentials
    51: _cluster("Alter"),                          # AlterUserScramCredentials
}


def decide(authz: Authorizer, api_key: int, principal: str, body: dict,
           handler: Callable[[dict], Any]):
    """The request's answer: the handler's (maybe awaitable), merged with what was denied."""
    verdict = RULES[api_key](authz, principal, body)
    if verdict is None:
        return handler(body)
    if type(verdict) is dict or verdict.denied:
        security_metrics.denied(principal, api_key)
    if type(verdict) is dict:
        return verdict
    if verdict.body is None:
        return verdict.merge(verdict.empty)
    result = handler(verdict.body)
    if result is None or type(result) is dict:
        return verdict.merge(result)
    return _merged_later(result, verdict.merge)


async def _merged_later(awaitable, merge: Callable[[dict], dict]) -> dict:
    return merge(await awaitable)


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

    def _denied(self, operation: str, entries, api_key: int) -> frozenset:
        """The topics of ``entries`` (each a tuple whose first field is its topic) the
        principal may not ``operation``; counted as one denial of the request."""
        principal = self.connection.principal
        authorize = self.authz.authorize
        denied = frozenset(topic for topic in {entry[0] for entry in entries}
                           if not authorize(principal, operation, "topic", topic))
        if denied:
            security_metrics.denied(principal, api_key)
        return denied

    def produce(self, request):
        return self.data.produce(request, self._denied("Write", request.partitions, 0))

    def fetch(self, request):
        if request.replica_id < 0:
            return self.data.fetch(request, self._denied("Read", request.partitions, 1))
        principal = self.connection.principal
        if self.authz.authorize(principal, "ClusterAction", "cluster", CLUSTER_NAME):
            return self.data.fetch(request)
        security_metrics.denied(principal, 1)
        return RequestDenied(**_cluster_denied(principal, "ClusterAction"))

    def list_offsets(self, request):
        return self.data.list_offsets(request,
                                      self._denied("Describe", request.queries, 2))

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
        return self.data.metadata(request, self._denied(
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

