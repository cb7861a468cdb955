"""Kafka's AlterPartitionReassignments (45), ListPartitionReassignments (46), ElectLeaders
(43) and DescribeCluster (60): what ``kafka-reassign-partitions`` and
``kafka-leader-election`` ask for, served by the partition admin
service (``admin/reassignments.py``: etcd's reassignment store in a cluster).

A Kafka body in, translated once into the partition admin service's typed request
(``broker/admin``: the same service tslog's own handlers call), its typed results back in
Kafka's shape. So a move started from Kafka's tool is the same durable reassignment
``tslog partitions reassign`` starts, listed and cancelled from either port, and the same
gate (``GatedPartitionAdmin``: Alter on the cluster) decides it. A request the gate denies
comes back as a ``RequestDenied``: answered here as Kafka answers a denied cluster
operation (the top-level error, and the same code on every partition named), so a denied
request changes nothing.

What tslog does not do is refused with a typed error rather than half-done: an unclean
election (ElectLeaders type 1: tslog never elects a replica outside the ISR) and a replica
id that cannot name a broker (negative). DescribeCluster lists the live brokers' Kafka
addresses, as Metadata does; tslog has no separate controller quorum to list, so endpoint
type 2 (controllers) is answered MISMATCHED_ENDPOINT_TYPE, and any other type
UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers them.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ...admin.partition_requests import (
    AlterReassignmentsRequest,
    ElectLeadersRequest,
    ListReassignmentsRequest,
    Move,
)
from ...data.requests import RequestDenied
from .data_apis import then
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)
_INVALID_ASSIGNMENT = int(ErrorCode.INVALID_REPLICA_ASSIGNMENT)
_CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
_MISMATCHED_ENDPOINT_TYPE, _UNSUPPORTED_ENDPOINT_TYPE = 114, 115  # Kafka's codes
_NO_OPERATIONS = -2147483648  # Kafka's "authorized operations not asked for"
_PREFERRED, _BROKERS, _CONTROLLERS = 0, 1, 2


# --------------------------------------------------------------------- reassignments


def alter_partition_reassignments(services: KafkaServices, body: dict, version: int,
                                  info: KafkaRequestInfo):
    """Start (replicas) or cancel (null) a reassignment per partition."""
    moves, refused = [], {}
    for topic in body["topics"]:
        for item in topic["partitions"]:
            replicas = item["replicas"]
            if replicas is not None and any(r < 0 for r in replicas):
                refused[topic["name"], item["partition_index"]] = \
                    f"replica ids name brokers (>= 0), not {replicas}"
            else:
                moves.append(Move(topic["name"], item["partition_index"],
                                  None if replicas is None else tuple(replicas)))

    def finish(results) -> dict:
        whole = (results.error_code, results.error_message) \
            if type(results) is RequestDenied else None
        each = iter(() if whole else results)
        out = []
        for topic in body["topics"]:
            answers = []
            for item in topic["partitions"]:
                index = item["partition_index"]
                if (topic["name"], index) in refused:
                    code, message = _INVALID_ASSIGNMENT, refused[topic["name"], index]
                else:
                    code, message = whole or next(each)
                answers.append({"partition_index": index, "error_code": int(code),
                                "error_message": message})
            out.append({"name": topic["name"], "partitions": answers})
        code, message = whole or (0, None)
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                "responses": out}

    if not moves:
        return finish([])
    return then(services.partition_admin.alter_reassignments(
        AlterReassignmentsRequest(moves)), finish)


def list_partition_reassignments(services: KafkaServices, body: dict, version: int,
                                 info: KafkaRequestInfo) -> dict:
    """The reassignments under way (of the partitions named, or all of them)."""
    topics = body["topics"]
    named = None if topics is None else [(t["name"], p) for t in topics
                                         for p in t["partition_indexes"]]
    results = services.partition_admin.list_reassignments(ListReassignmentsRequest(named))
    if type(results) is RequestDenied:
        return {"throttle_time_ms": 0, "error_code": results.error_code,
                "error_message": results.error_message, "topics": []}
    grouped: dict[str, list[dict]] = {}
    for r in results:
        grouped.setdefault(r.topic, []).append({
            "partition_index": r.partition, "replicas": r.replicas,
            "adding_replicas": r.adding_replicas, "removing_replicas": r.removing_replicas})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": [
        {"name": name, "partitions": partitions} for name, partitions in grouped.items()]}


# ------------------------------------------------------------------------- elections


def elect_leaders(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    """Preferred-leader elections (type 0; v0 has no type and means preferred)."""
    named = body["topic_partitions"]
    asked = None if named is None else [
        {"topic": t["topic"], "partitions": list(t["partitions"])} for t in named]
    if body.get("election_type", _PREFERRED) != _PREFERRED:
        return _elected(asked or [], {}, (_INVALID_REQUEST, "tslog elects preferred leaders "
                                          "only: a leader outside the ISR could lose "
                                          "acknowledged records"), version)
    request = ElectLeadersRequest(None if asked is None else [
        (t["topic"], partition) for t in asked for partition in t["partitions"]])
    return then(services.partition_admin.elect_leaders(request),
                lambda results: _elected_from(asked, results, version))


def _elected_from(asked: list[dict] | None, results, version: int) -> dict:
    if type(results) is RequestDenied:
        return _elected(asked or [], {}, (results.error_code, results.error_message), version)
    answers = {(r.topic, r.partition): (r.error_code, r.error_message) for r in results}
    if asked is None:  # every partition the service elected or tried
        grouped: dict[str, list[int]] = {}
        for r in results:
            grouped.setdefault(r.topic, []).append(r.partition)
        asked = [{"topic": topic, "partitions": partitions}
                 for topic, partitions in grouped.items()]
    return _elected(asked, answers, None, version)


def _elected(asked: list[dict], answers: dict, whole, version: int) -> dict:
    results = []
    for topic in asked:
        partitions = []
        for partition in topic["partitions"]:
            code, message = answers.get((topic["topic"], partition)) \
                or whole or (_INVALID_REQUEST, None)
            partitions.append({"partition_id": partition, "error_code": int(code),
                               "error_message": message})
        results.append({"topic": topic["topic"], "partition_result": partitions})
    top = whole[0] if whole and whole[0] == _CLUSTER_DENIED else 0
    return {"throttle_time_ms": 0, "error_code": top if version >= 1 else 0,
            "replica_election_results": results}


# ---------------------------------------------------------------------------- cluster


def describe_cluster(services: KafkaServices, body: dict, version: int,
                     info: KafkaRequestInfo) -> dict:
    """The live brokers' Kafka addresses and the controller, from the cluster view."""
    answer = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
              "endpoint_type": _BROKERS, "cluster_id": services.config.cluster_name,
              "controller_id": services.cluster.controller_id(), "brokers": [],
              "cluster_authorized_operations": _NO_OPERATIONS}
    asked = body.get("endpoint_type", _BROKERS)
    if asked != _BROKERS:
        code = _MISMATCHED_ENDPOINT_TYPE if asked == _CONTROLLERS else _UNSUPPORTED_ENDPOINT_TYPE
        answer.update(error_code=code, controller_id=-1,
                      error_message=f"endpoint type {asked} is not served: tslog brokers are "
                                    "their own controllers (describe the brokers, type 1)")
        return answer
    answer["brokers"] = [{"broker_id": node, "host": host, "port": port, "rack": None,
                          "is_fenced": False}
                         for node, (host, port) in sorted(services.cluster.kafka_brokers()
                                                          .items())]
    return answer


REASSIGN_ADAPTERS = {
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments,
    ApiKey.ELECT_LEADERS: elect_leaders,
    60: describe_cluster,  # DescribeCluster: tslog's own protocol has no twin
}
