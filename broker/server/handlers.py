"""Handlers of the admin and group APIs: ``handler(services, body) -> body | awaitable``.

The first argument is the narrow set of services the handler's group uses (``services.py``:
``AdminApis``, ``GroupApis``), bound to it once at start (``dispatch.py``). The topic and
config APIs are the native adapter of the topic admin service (``broker/admin``): tslog's
body in, the typed request, the service's results back as tslog's body; the Kafka port's
adapters (``kafka/admin_apis.py``, ``kafka/config_apis.py``) call the same service. The
data path's handlers are in ``data_handlers.py`` (Metadata too), the partition admin APIs'
(DeleteRecords, the replication and reassignment APIs, OffsetsAtTimes) in
``partition_handlers.py``.

The connection decodes and schema-checks the request (``tslog.protocol.messages``) before a
handler runs, so handlers only see well-typed bodies and decide semantics: unknown topics,
name rules, config validity. Everything a user can get wrong comes back as an error code in
the response; an exception escaping a handler is a bug, answered by the connection as
UNKNOWN_SERVER_ERROR and logged with its traceback on the broker only.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode
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
from ..groups.offset_files import MAX_METADATA_BYTES, group_id_problem
from ..metrics.observe import observe_commit
from .group_handlers import coordinator_problem, refused_commit
from .services import AdminApis, GroupApis

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


def _commit_code(services: GroupApis, topic: str, entry: dict) -> int:
    """A commit names an existing partition (of the cluster's topics: in a cluster the broker
    storing offsets need not host a replica of it) and carries small metadata."""
    known = services.topics.topics.get(topic)
    if known is None or not 0 <= entry["partition"] < known.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if len(entry["metadata"].encode()) > MAX_METADATA_BYTES:
        return ErrorCode.OFFSET_METADATA_TOO_LARGE
    return 0


def _fence_code(services: GroupApis, group_id: str, body: dict) -> int:
    """The coordinator's verdict on who commits (docs/groups.md, "Fencing"): a v0 body names
    no member, so it commits as a client outside group management (member "", epoch -1)."""
    if group_id_problem(group_id) is not None:
        return ErrorCode.INVALID_GROUP_ID
    return services.groups.coordinator.validate_commit(
        group_id, body.get("member_id", ""), body.get("member_epoch", -1))


def handle_offset_commit(services: GroupApis, body: dict):
    """Store the offsets of a commit the coordinator accepts. A refused one (a removed member,
    a stale epoch, a plain client while the group has members) stores nothing and carries the
    refusal on every partition, so a zombie consumer cannot move the group's position."""
    not_here = coordinator_problem(services)  # commits go to the coordinator (controller)
    if not_here:
        return refused_commit(body, not_here)
    group_id = body["group_id"]
    refused = _fence_code(services, group_id, body)
    offsets = {}
    topics_out = []
    for group in body["topics"]:
        parts_out = []
        for entry in group["partitions"]:
            code = refused or _commit_code(services, group["topic"], entry)
            if code == 0:
                offsets[group["topic"], entry["partition"]] = (entry["offset"], entry["metadata"])
            parts_out.append({"partition": entry["partition"], "error_code": code})
        topics_out.append({"topic": group["topic"], "partitions": parts_out})
    response = {"topics": topics_out}
    if not offsets:
        return response
    return commit_durably(services, group_id, offsets, response)


async def commit_durably(services: GroupApis, group_id: str, offsets: dict,
                          response: dict) -> dict:
    """Answer once the offsets are fsynced. A per-group asyncio lock (FIFO) keeps commits of
    one group in arrival order, so an older snapshot never lands after a newer one. Kafka's
    OffsetCommit answer has the same topics/partitions/error_code shape, so the Kafka
    listener's adapter uses this too."""
    try:
        await services.offsets.commit(group_id, offsets)
        observe_commit(group_id)
    except OSError as exc:
        log.error("committing offsets of group %r failed: %r", group_id, exc)
        for group in response["topics"]:
            for result in group["partitions"]:
                if result["error_code"] == 0:
                    result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
    return response


def handle_offset_fetch(services: GroupApis, body: dict) -> dict:
    committed = services.offsets.fetch(body["group_id"])
    requested = body["topics"]
    if requested is None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(committed):
            by_topic.setdefault(topic, []).append(partition)
        requested = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
    topics_out = []
    for group in requested:
        parts_out = []
        for partition in group["partitions"]:
            offset, metadata = committed.get((group["topic"], partition), (-1, ""))
            parts_out.append({"partition": partition, "offset": offset, "metadata": metadata,
                              "error_code": 0})
        topics_out.append({"topic": group["topic"], "partitions": parts_out})
    return {"topics": topics_out}

