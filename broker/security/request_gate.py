"""What every API needs from the ACLs, and the verdict for one request (Kafka's mapping).

A rule per api key reads the request body and the connection's principal and returns one of:

- ``None``: allowed, run the handler on the body as it is;
- a dict: the whole request is denied; this is its answer and the handler never runs
  (cluster-level APIs: CLUSTER_AUTHORIZATION_FAILED; a group a member may not read);
- a ``Partial``: some topics, partitions or groups are denied. The handler runs on a body
  without them (or not at all when nothing is left) and the denied entries are merged into
  its response, with TOPIC_AUTHORIZATION_FAILED or GROUP_AUTHORIZATION_FAILED, in the shape
  the response schema requires. So a denied part of a request changes nothing.

ListGroups hides what may not be described (listing everything); Metadata does the same,
judged typed with Produce, Fetch and ListOffsets by ``GatedData``, and answers
TOPIC_AUTHORIZATION_FAILED for a topic asked by name, so a name tells nothing about whether
the topic exists. The typed services' APIs (``TYPED_GATES``) have no rule here: their
wrappers judge the typed requests (``GatedData`` below; ``GatedPartitionAdmin``, in
``partition_admin_gate.py``, for DeleteRecords, InitProducerId, OffsetForLeaderEpoch,
ElectLeaders, Alter/ListPartitionReassignments, OffsetsAtTimes and the Kafka port's
DescribeLogDirs; ``GatedTopicAdmin``, in ``topic_admin_gate.py``, for Create/DeleteTopics,
CreatePartitions, Describe/AlterConfigs and the Kafka port's IncrementalAlterConfigs).

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
from .partition_admin_gate import GatedPartitionAdmin
from .topic_admin_gate import GatedTopicAdmin

__all__ = ["ANONYMOUS", "DATA_KEYS", "GROUP_OPERATIONS", "RULES", "TYPED_GATES", "GatedData",
           "GatedPartitionAdmin", "GatedTopicAdmin", "RequestGate", "HostAuthorizer",
           "decide", "may_use_group"]

TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
GROUP_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
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


def _keeping(key: str, name_of: Callable[[dict], str],
             allowed: Callable[[str], bool]) -> Callable[[dict], dict]:
    def merge(response: dict) -> dict:
        if response is None or key not in response:
            return response
        return {**response, key: [entry for entry in response[key]
                                  if allowed(name_of(entry))]}
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


def may_use_group(authz, principal: str, api_key: int, group_id: str) -> bool:
    """The one group ACL check of both ports: may ``principal`` make request ``api_key`` on
    the group? ``authz`` is the authorizer bound to the request's host (``HostAuthorizer``
    for a Kafka adapter, the gate's own for a native request)."""
    return authz.authorize(principal, GROUP_OPERATIONS[api_key], "group", group_id)


class HostAuthorizer:
    """The authorizer as the rules see it for a request from ``host`` (ACLs may name one):
    the Kafka adapters, whose request info carries the host, check through it."""

    __slots__ = ("authz", "host")

    def __init__(self, authz: Authorizer, host: str) -> None:
        self.authz = authz
        self.host = host

    def authorize(self, principal: str, operation: str, resource_type: str, name: str) -> bool:
        return self.authz.authorize(principal, operation, resource_type, name, self.host)

    def authorize_any(self, principal: str, operation: str, resource_type: str) -> bool:
        return self.authz.authorize_any(principal, operation, resource_type, self.host)


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

_commit_topics = _topic_partitions("Read", lambda p: {
    "partition": p["partition"], "error_code": TOPIC_DENIED})
_fetch_offset_topics = _topic_partitions("Describe", lambda p: {
    "partition": p, "offset": -1, "metadata": "", "error_code": TOPIC_DENIED})


def _offset_commit(authz: Authorizer, principal: str, body: dict):
    if not may_use_group(authz, principal, 8, body["group_id"]):
        return {"topics": [{"topic": t["topic"], "partitions": [
            {"partition": p["partition"], "error_code": GROUP_DENIED}
            for p in t["partitions"]]} for t in body["topics"]]}
    return _commit_topics(authz, principal, body)


def _offset_fetch(authz: Authorizer, principal: str, body: dict):
    if not may_use_group(authz, principal, 9, body["group_id"]):
        return {"error_code": GROUP_DENIED,
                "error_message": _message(principal, "Describe", "group", body["group_id"])}
    if body["topics"] is None:  # every committed offset: hide topics not describable
        return Partial(body, _keeping("topics", lambda t: t["topic"], lambda name:
                                      authz.authorize(principal, "Describe", "topic", name)),
                       {}, denied=False)
    return _fetch_offset_topics(authz, principal, body)


_find_coordinator = _named(GROUP_OPERATIONS[10], "group", "keys", "coordinators",
                           lambda principal, key: {"key": key, "node_id": -1, "host": "",
                                                   "port": 0, "error_code": GROUP_DENIED})


def _list_groups(authz: Authorizer, principal: str, body: dict):
    if authz.authorize(principal, "Describe", "cluster", CLUSTER_NAME):
        return None
    return Partial(body, _keeping("groups", lambda g: g["group_id"], lambda name:
                                  may_use_group(authz, principal, 16, name)), {},
                   denied=False)


_delete_groups = _named(GROUP_OPERATIONS[42], "group", "groups", "results",
                        lambda principal, group: {"group_id": group, "error_code": GROUP_DENIED})
_describe_groups = _named(GROUP_OPERATIONS[69], "group", "groups", "groups",
                          lambda principal, group: {
                              "group_id": group, "error_code": GROUP_DENIED, "state": "",
                              "group_epoch": -1, "assignment_epoch": -1, "assignor": "",
                              "members": []})


def _heartbeat(authz: Authorizer, principal: str, body: dict):
    """Read on the group, and Describe on every subscribed topic (Kafka's KIP-848 check)."""
    code = 0
    if not may_use_group(authz, principal, 68, body["group_id"]):
        code = GROUP_DENIED
    elif any(not authz.authorize(principal, "Describe", "topic", name)
             for name in body["subscribed_topics"] or ()):
        code = TOPIC_DENIED
    if not code:
        return None
    return {"error_code": code, "member_id": body["member_id"],
            "member_epoch": body["member_epoch"], "heartbeat_interval_ms": 0,
            "assignment": None}


# api key (a number: some APIs are added by other parts of the product) -> its rule. The
# typed services' keys (``TYPED_GATES``) are judged typed instead, by their wrappers.
RULES: dict[int, Rule] = {
    8: _offset_commit,                              # OffsetCommit: Read group + Read topic
    9: _offset_fetch,                               # OffsetFetch: Describe group + topic
    10: _find_coordinator,                          # FindCoordinator: Describe group
    16: _list_groups,                               # ListGroups: Describe group (hides)
    17: _nothing,                                   # SaslHandshake
    18: _nothing,                                   # ApiVersions
    29: _cluster("Describe"),                       # DescribeAcls
    30: _cluster("Alter"),                          # CreateAcls
    31: _cluster("Alter"),                          # DeleteAcls
    36: _nothing,                                   # SaslAuthenticate
    42: _delete_groups,                             # DeleteGroups: Delete group
    50: _cluster("Describe"),                       # DescribeUserScramCredentials
    51: _cluster("Alter"),                          # AlterUserScramCredentials
    68: _heartbeat,                                 # ConsumerGroupHeartbeat: Read group
    69: _describe_groups,                           # ConsumerGroupDescribe: Describe group
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
                                                              # Metadata
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

