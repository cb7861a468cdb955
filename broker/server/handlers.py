"""Handlers of the admin APIs, and OffsetCommit and OffsetFetch:
``handler(services, body) -> body | awaitable``.

The first argument is the narrow set of services the handler's group uses (``services.py``:
``AdminApis``), bound to it once at start (``dispatch.py``). The topic and config APIs are
the native adapter of the topic admin service (``broker/admin``): tslog's body in, the typed
request, the service's results back as tslog's body; the Kafka port's adapters
(``kafka/admin_apis.py``, ``kafka/config_apis.py``) call the same service. OffsetCommit's
and OffsetFetch's is the group service (``groups/api.py``) or, with the authorizer on, the
connection's ``GatedGroups`` in front of it, whose typed requests they translate to and
from, as the Kafka port's adapters do. The data path's handlers are in ``data_handlers.py``
(Metadata too), the partition admin APIs' (DeleteRecords, the replication and reassignment
APIs, OffsetsAtTimes) in ``partition_handlers.py``.

The connection decodes and schema-checks the request (``tslog.protocol.messages``) before a
handler runs, so handlers only see well-typed bodies and decide semantics: unknown topics,
name rules, config validity. Everything a user can get wrong comes back as an error code in
the response; an exception escaping a handler is a bug, answered by the connection as
UNKNOWN_SERVER_ERROR and logged with its traceback on the broker only.
"""

from __future__ import annotations

import logging

from tslog.protocol.messages import api_versions_list

from ..admin.requests import (
    AlterConfigsRequest,
    ConfigChange,
    ConfigResource,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    NewPartitions,
    NewTopic,
)
from ..groups.requests import OffsetCommitRequest, OffsetFetchRequest, make
from .services import AdminApis

log = logging.getLogger("tslog.broker.handlers")


_API_KEYS = api_versions_list()  # static for the life of the process


def handle_api_versions(services: AdminApis, body: dict) -> dict:
    return {"error_code": 0, "api_keys": _API_KEYS}


# ------------------------------------------------------------------------------ topic admin
# Bound to the topic admin service (``broker/admin``), or, with the authorizer on, to the
# connection's ``GatedTopicAdmin`` in front of it, which has the same methods: each handler
# translates its body into the typed request once and the results back into its answer.


async def handle_create_topics(admin, body: dict) -> dict:
    results = await admin.create_topics(CreateTopicsRequest(
        [NewTopic(t["topic"], t["partitions"], t["replication_factor"], t["configs"])
         for t in body["topics"]], body["timeout_ms"]))
    return {"topics": [r._asdict() for r in results]}


async def handle_create_partitions(admin, body: dict) -> dict:
    results = await admin.create_partitions(CreatePartitionsRequest(
        [NewPartitions(t["topic"], t["count"]) for t in body["topics"]],
        body["validate_only"]))
    return {"topics": [r._asdict() for r in results]}


async def handle_delete_topics(admin, body: dict) -> dict:
    """tslog's DeleteTopics answers a code per topic (its schema has no message)."""
    results = await admin.delete_topics(DeleteTopicsRequest(list(body["topics"]),
                                                            body["timeout_ms"]))
    return {"topics": [{"topic": r.topic, "error_code": r.error_code} for r in results]}


def handle_describe_configs(admin, body: dict) -> dict:
    results = admin.describe_configs(DescribeConfigsRequest(
        [ConfigResource(r["type"], r["name"]) for r in body["resources"]]))
    return {"resources": [{"type": r.type, "name": r.name, "error_code": r.error_code,
                           "error_message": r.error_message,
                           "configs": [e._asdict() for e in r.configs]} for r in results]}


async def handle_alter_configs(admin, body: dict) -> dict:
    results = await admin.alter_configs(AlterConfigsRequest(
        [ConfigChange(r["type"], r["name"], r["configs"]) for r in body["resources"]],
        body["validate_only"]))
    return {"resources": [r._asdict() for r in results]}


def handle_offset_commit(groups, body: dict):
    """The group service's commit (``groups/offsets_api.py``): offsets the coordinator
    accepts are stored and the answer waits for the fsync; a refused commit (a removed
    member, a stale epoch, a plain client while the group has members) stores nothing and
    carries the refusal on every partition, so a zombie consumer cannot move the group's
    position."""
    partitions = []  # ``CommitPartition``'s fields, as plain tuples (``groups/requests.py``)
    for group in body["topics"]:
        topic = group["topic"]
        for entry in group["partitions"]:
            partitions.append((topic, entry["partition"], entry["offset"], entry["metadata"]))
    # a v0 body names no member, so it commits as a client outside group management
    codes = groups.offset_commit(make(OffsetCommitRequest, (
        body["group_id"], body.get("member_id", ""), body.get("member_epoch", -1), partitions,
        False)))
    if type(codes) is list:
        return _committed(body, codes)
    return _committed_later(body, codes)


async def _committed_later(body: dict, codes) -> dict:
    return _committed(body, await codes)


def _committed(body: dict, codes: list[int]) -> dict:
    each = iter(codes)
    return {"topics": [{"topic": group["topic"], "partitions": [
        {"partition": entry["partition"], "error_code": next(each)}
        for entry in group["partitions"]]} for group in body["topics"]]}


def handle_offset_fetch(groups, body: dict) -> dict:
    """The group's committed offsets (-1 for none) of the partitions asked, or of every
    partition it has one for (``topics`` None), by topic."""
    asked = body["topics"]
    fetched = groups.offset_fetch(make(OffsetFetchRequest, (
        body["group_id"], None if asked is None else [
            (group["topic"], partition) for group in asked for partition in group["partitions"]],
        False)))
    if fetched.error_code:  # the group was refused
        return {"error_code": fetched.error_code, "error_message": fetched.error_message}
    if asked is None:  # every committed offset, sorted: one entry per topic
        asked = []
        for topic, partition, *_ in fetched.partitions:
            if not asked or asked[-1]["topic"] != topic:
                asked.append({"topic": topic, "partitions": []})
            asked[-1]["partitions"].append(partition)
    each = iter(fetched.partitions)  # ``FetchedOffset``'s fields, by position
    topics_out = []
    for group in asked:
        out = []
        for _ in group["partitions"]:
            _, partition, offset, metadata, code = next(each)
            out.append({"partition": partition, "offset": offset, "metadata": metadata,
                        "error_code": code})
        topics_out.append({"topic": group["topic"], "partitions": out})
    return {"topics": topics_out}
