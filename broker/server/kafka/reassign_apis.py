"""Kafka's AlterPartitionReassignments (45), ListPartitionReassignments (46), ElectLeaders
(43) and DescribeCluster (60): what ``kafka-reassign-partitions`` and
``kafka-leader-election`` ask for, served by tslog's native handlers
(``reassign_handlers.py``: etcd's reassignment store in a cluster).

As in ``admin_apis.py``: a Kafka body in, the native body to the native (gated) handler, its
answer back in Kafka's shape. Why through the native handlers: a move started from Kafka's
tool is the same durable reassignment ``tslog partitions reassign`` starts, listed and
cancelled from either port, and the same ACL rule (Alter on the cluster) decides it. A
request the gate denies comes back as one dict with the error: answered here as Kafka
answers a denied cluster operation (the top-level error, and the same code on every
partition named), so a denied request changes nothing.

What tslog does not do is refused with a typed error rather than half-done: an unclean
election (ElectLeaders type 1: tslog never elects a replica outside the ISR) and a replica
id that cannot name a broker (negative). DescribeCluster lists the live brokers' Kafka
addresses, as Metadata does; tslog has no separate controller quorum to list, so endpoint
type 2 (controllers) is answered MISMATCHED_ENDPOINT_TYPE, and any other type
UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers them.
"""

from __future__ import annotations

import inspect

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from .request_info import KafkaRequestInfo
from .services import KafkaServices

_INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)
_INVALID_ASSIGNMENT = int(ErrorCode.INVALID_REPLICA_ASSIGNMENT)
_MISMATCHED_ENDPOINT_TYPE, _UNSUPPORTED_ENDPOINT_TYPE = 114, 115  # Kafka's codes
_NO_OPERATIONS = -2147483648  # Kafka's "authorized operations not asked for"
_PREFERRED, _BROKERS, _CONTROLLERS = 0, 1, 2


async def _native(services: KafkaServices, api_key: ApiKey, body: dict) -> dict:
    """The native handler's answer (a gate's refusal is a dict at once, not awaitable)."""
    answer = services.native[api_key](body)
    return (await answer) if inspect.isawaitable(answer) else answer


def _whole_error(native: dict) -> tuple[int, str | None] | None:
    """(code, message) when the native answer refused the whole request (the gate)."""
    if "topics" in native:
        return None
    return int(native.get("error_code", _INVALID_REQUEST)), native.get("error_message")


# --------------------------------------------------------------------- reassignments


async def alter_partition_reassignments(services: KafkaServices, body: dict, version: int,
                                  info: KafkaRequestInfo):
    """Start (replicas) or cancel (null) a reassignment per partition."""
    entries, refused = [], {}
    for topic in body["topics"]:
        partitions = []
        for item in topic["partitions"]:
            replicas = item["replicas"]
            if replicas is not None and any(r < 0 for r in replicas):
                refused[topic["name"], item["partition_index"]] = \
                    f"replica ids name brokers (>= 0), not {replicas}"
            else:
                partitions.append({"partition": item["partition_index"],
                                   "replicas": None if replicas is None else list(replicas)})
        if partitions:
            entries.append({"topic": topic["name"], "partitions": partitions})

    def finish(native: dict) -> dict:
        whole = _whole_error(native)
        answers = {(t["topic"], p["partition"]): p for t in native.get("topics", ())
                   for p in t["partitions"]}
        out = []
        for topic in body["topics"]:
            results = []
            for item in topic["partitions"]:
                key = (topic["name"], item["partition_index"])
                results.append(_partition_answer(key, answers, refused, whole))
            out.append({"name": topic["name"], "partitions": results})
        code, message = whole if whole else (0, None)
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                "responses": out}

    if not entries:
        return finish({"topics": []})
    return finish(await _native(services, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                                {"timeout_ms": max(body["timeout_ms"], 0), "topics": entries}))


def _partition_answer(key: tuple[str, int], answers: dict, refused: dict, whole) -> dict:
    if key in refused:
        return {"partition_index": key[1], "error_code": _INVALID_ASSIGNMENT,
                "error_message": refused[key]}
    answer = answers.get(key)
    if answer is None:
        code, message = whole or (_INVALID_REQUEST, "no answer for this partition")
        return {"partition_index": key[1], "error_code": code, "error_message": message}
    return {"partition_index": key[1], "error_code": int(answer["error_code"]),
            "error_message": answer.get("error_message")}


async def list_partition_reassignments(services: KafkaServices, body: dict, version: int,
                                 info: KafkaRequestInfo):
    """The reassignments under way (of the partitions named, or all of them)."""
    topics = body["topics"]
    native_topics = None if topics is None else [
        {"topic": t["name"], "partitions": list(t["partition_indexes"])} for t in topics]

    def finish(native: dict) -> dict:
        whole = _whole_error(native)
        if whole:
            return {"throttle_time_ms": 0, "error_code": whole[0], "error_message": whole[1],
                    "topics": []}
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": [
            {"name": t["topic"], "partitions": [
                {"partition_index": p["partition"], "replicas": p["replicas"],
                 "adding_replicas": p["adding_replicas"],
                 "removing_replicas": p["removing_replicas"]} for p in t["partitions"]]}
            for t in native["topics"]]}

    return finish(await _native(services, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                {"timeout_ms": max(body["timeout_ms"], 0),
                                 "topics": native_topics}))


# ------------------------------------------------------------------------- elections


async def elect_leaders(services: KafkaServices, body: dict, version: int,
                        info: KafkaRequestInfo):
    """Preferred-leader elections (type 0; v0 has no type and means preferred)."""
    named = body["topic_partitions"]
    asked = None if named is None else [
        {"topic": t["topic"], "partitions": list(t["partitions"])} for t in named]
    if body.get("election_type", _PREFERRED) != _PREFERRED:
        return _elected(asked or [], {}, (_INVALID_REQUEST, "tslog elects preferred leaders "
                                          "only: a leader outside the ISR could lose "
                                          "acknowledged records"), version)
    native = await _native(services, ApiKey.ELECT_LEADERS,
                           {"timeout_ms": max(body["timeout_ms"], 0), "topics": asked})
    return _elected_from(asked, native, version)


def _elected_from(asked: list[dict] | None, native: dict, version: int) -> dict:
    whole = _whole_error(native)
    if whole:
        return _elected(asked or [], {}, whole, version)
    answers = {(t["topic"], p["partition"]): p for t in native["topics"]
               for p in t["partitions"]}
    if asked is None:  # every partition the native side elected or tried
        asked = [{"topic": t["topic"], "partitions": [p["partition"] for p in t["partitions"]]}
                 for t in native["topics"]]
    return _elected(asked, answers, None, version)


def _elected(asked: list[dict], answers: dict, whole, version: int) -> dict:
    results = []
    for topic in asked:
        partitions = []
        for partition in topic["partitions"]:
            answer = answers.get((topic["topic"], partition))
            code, message = (int(answer["error_code"]), answer.get("error_message")) \
                if answer is not None else (whole or (_INVALID_REQUEST, None))
            partitions.append({"partition_id": partition, "error_code": code,
                               "error_message": message})
        results.append({"topic": topic["topic"], "partition_result": partitions})
    top = whole[0] if whole and whole[0] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else 0
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
