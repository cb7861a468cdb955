"""One handler per ApiKey: ``handler(broker, body) -> body | awaitable of body | None``.

The connection decodes and schema-checks the request (``tslog.protocol.messages``) before a
handler runs, so handlers only see well-typed bodies and decide semantics: unknown topics,
name rules, config validity. Everything a user can get wrong comes back as an error code in
the response; an exception escaping a handler is a bug, answered by the connection as
UNKNOWN_SERVER_ERROR and logged with its traceback on the broker only.
"""

from __future__ import annotations

import asyncio
import logging

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey, api_versions_list

from ..cluster.errors import ClusterError
from ..cluster.view import NO_LEADER
from ..group_offsets import MAX_METADATA_BYTES, group_id_problem
from ..metadata import topic_name_problem
from ..metrics.definitions import forget_topic
from ..topics import TopicError
from .data_handlers import error_code_for, handle_fetch, handle_list_offsets, handle_produce
from .replication_handlers import handle_init_producer_id, handle_offset_for_leader_epoch
from .state import Broker

log = logging.getLogger("tslog.broker.handlers")


_API_KEYS = api_versions_list()  # static for the life of the process


def handle_api_versions(broker: Broker, body: dict) -> dict:
    return {"error_code": 0, "api_keys": _API_KEYS}


def _partition_metadata(broker: Broker, topic: str, partition: int) -> dict:
    state = broker.cluster.partition_state(topic, partition)
    if state is None:  # the topic's record arrived before this partition's state
        return {"partition": partition, "error_code": ErrorCode.LEADER_NOT_AVAILABLE,
                "leader": NO_LEADER, "leader_epoch": -1, "replicas": [], "isr": []}
    return {"partition": partition,
            "error_code": ErrorCode.LEADER_NOT_AVAILABLE if state.leader == NO_LEADER else 0,
            "leader": state.leader, "leader_epoch": state.leader_epoch,
            "replicas": list(state.replicas), "isr": list(state.isr)}


def handle_metadata(broker: Broker, body: dict) -> dict:
    known = broker.topics.topics
    names = sorted(known) if body["topics"] is None else body["topics"]
    topics_out = []
    for name in names:
        topic = known.get(name)
        if topic is None:
            code = (ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_problem(name)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            topics_out.append({"topic": name, "error_code": code, "partitions": []})
            continue
        topics_out.append({"topic": name, "error_code": 0, "partitions": [
            _partition_metadata(broker, name, p) for p in range(topic.partitions)]})
    brokers = [{"node_id": node, "host": host, "port": port}
               for node, (host, port) in sorted(broker.cluster.brokers().items())]
    return {"brokers": brokers, "controller_id": broker.cluster.controller_id(),
            "topics": topics_out}


def handle_create_topics(broker: Broker, body: dict):
    if broker.cluster_store is not None:
        return _create_topics_in_cluster(broker, body)
    return _create_topics_locally(broker, body)


async def _create_topics_locally(broker: Broker, body: dict) -> dict:
    """Validated on the loop, written in a thread (a record and empty logs: fsyncs, about
    1 ms a partition here), then served: other clients are never held up by the disk. One
    topic change at a time (``admin_lock``), so two creations of a name cannot race."""
    topics = broker.topics
    results = []
    async with broker.admin_lock:
        for entry in body["topics"]:
            result = {"topic": entry["topic"], "error_code": 0, "error_message": None}
            try:
                topic = topics.validate_new_topic(entry["topic"], entry["partitions"],
                                                  entry["replication_factor"], entry["configs"])
                topics.publish_topic(topic, await asyncio.to_thread(topics.write_new_topic, topic))
            except (TopicError, OSError) as exc:
                result["error_code"], result["error_message"] = _failure(
                    exc, f"create topic {entry['topic']}")
            results.append(result)
    return {"topics": results}


def handle_delete_topics(broker: Broker, body: dict):
    if broker.cluster_store is not None:
        return _delete_topics_in_cluster(broker, body)
    return _delete_topics_locally(broker, body)


async def _delete_topics_locally(broker: Broker, body: dict) -> dict:
    """The record goes first (in a thread; a journal entry that needs no free space), then
    the topic stops being served (on the loop), then its files go (in a thread), which on a
    full disk makes the room to rewrite the record: a failed record write changes nothing."""
    topics = broker.topics
    results = []
    async with broker.admin_lock:
        for name in body["topics"]:
            code = 0
            try:
                await asyncio.to_thread(topics.forget_topic_durably, name)
                removed = topics.unpublish_topic(name)
                for plog in removed:
                    broker.notifier.notify(plog)  # long polls answer UNKNOWN_TOPIC_OR_PARTITION
                forget_topic(name)
            except (TopicError, OSError) as exc:
                code = _failure(exc, f"delete topic {name}")[0]
            else:
                try:
                    await asyncio.to_thread(topics.finish_deletion, name, removed)
                except OSError as exc:  # the topic is gone; leftovers go at the next start
                    log.error("deleting the files of topic %s: %r", name, exc)
                await _forget_committed_offsets(broker, name)
            results.append({"topic": name, "error_code": code})
    return {"topics": results}


async def _forget_committed_offsets(broker: Broker, topic: str) -> None:
    """A deleted topic's committed offsets leave every group, as in Kafka: re-created under
    the same name, the topic must not hand a group its predecessor's offsets (past the new
    log end, a consumer would reset by its policy and, with ``latest``, skip records)."""
    for group_id, offsets in broker.groups.all_groups().items():
        if not any(tp[0] == topic for tp in offsets):
            continue
        try:
            async with broker.group_locks.setdefault(group_id, asyncio.Lock()):
                await broker.groups.forget_topic(group_id, topic)
        except OSError as exc:  # the topic is deleted all the same; logged for the operator
            log.error("dropping the committed offsets of deleted topic %s from group %r: %r",
                      topic, group_id, exc)


async def _create_topics_in_cluster(broker: Broker, body: dict) -> dict:
    """Validate here, then one etcd transaction per topic (EtcdMetadataStore)."""
    results = []
    for entry in body["topics"]:
        result = {"topic": entry["topic"], "error_code": 0, "error_message": None}
        try:
            topic = broker.topics.validate_new_topic(
                entry["topic"], entry["partitions"], entry["replication_factor"],
                entry["configs"], clustered=True)
            await broker.cluster_store.create_topic(topic)
        except (TopicError, ClusterError) as exc:
            result["error_code"], result["error_message"] = _failure(exc)
        results.append(result)
    return {"topics": results}


async def _delete_topics_in_cluster(broker: Broker, body: dict) -> dict:
    """Remove from etcd; every broker's watch then deletes its local logs of the topic, and
    the groups' committed offsets of it (deleted in etcd here)."""
    results = []
    for name in body["topics"]:
        code = 0
        try:
            await broker.cluster_store.remove_topic(name)
        except (TopicError, ClusterError) as exc:
            code = _failure(exc)[0]
        else:
            await _forget_committed_offsets(broker, name)
        results.append({"topic": name, "error_code": code})
    return {"topics": results}


def _failure(exc: TopicError | ClusterError | OSError, what: str = "") -> tuple[int, str]:
    """(error code, message) a topic or config change answers for ``exc``: the topic's own
    error, etcd being unreachable (clustered), or the local disk failing (single node; both
    logged here, as the client only sees a code)."""
    if isinstance(exc, TopicError):
        return exc.error_code, exc.message
    if isinstance(exc, OSError):
        return error_code_for(exc, what), f"storage error: {exc}"
    log.warning("cluster metadata change failed: %s", exc)
    return ErrorCode.REQUEST_TIMED_OUT, "the cluster's metadata store (etcd) is unreachable"


def handle_describe_configs(broker: Broker, body: dict) -> dict:
    results = []
    for resource in body["resources"]:
        kind, name = resource["type"], resource["name"]
        result = {"type": kind, "name": name, "error_code": 0, "error_message": None,
                  "configs": []}
        try:
            if kind == "broker":
                if name not in ("", str(broker.config.node_id)):
                    raise TopicError(ErrorCode.INVALID_REQUEST, f"this is broker "
                                     f"{broker.config.node_id}, not {name!r}")
                entries = broker.topics.describe_broker_configs()
            else:
                entries = broker.topics.describe_topic_configs(name)
            result["configs"] = [e._asdict() for e in entries]
        except TopicError as exc:
            result["error_code"], result["error_message"] = exc.error_code, exc.message
        results.append(result)
    return {"resources": results}


def handle_alter_configs(broker: Broker, body: dict):
    if broker.cluster_store is not None:
        return _alter_configs_in_cluster(broker, body)
    return _alter_configs_locally(broker, body)


async def _alter_configs_locally(broker: Broker, body: dict) -> dict:
    """Validated on the loop, stored durably in a thread, then applied to the live logs."""
    topics = broker.topics
    results = []
    async with broker.admin_lock:
        for resource in body["resources"]:
            result = {"type": resource["type"], "name": resource["name"], "error_code": 0,
                      "error_message": None}
            try:
                updated = topics.altered_topic(resource["name"], resource["configs"])
                if not body["validate_only"]:
                    await asyncio.to_thread(topics.store.put_topic, updated)
                    topics.apply_topic_configs(updated)
            except (TopicError, OSError) as exc:
                result["error_code"], result["error_message"] = _failure(
                    exc, f"alter configs of {resource['name']}")
            results.append(result)
    return {"resources": results}


async def _alter_configs_in_cluster(broker: Broker, body: dict) -> dict:
    results = []
    for resource in body["resources"]:
        result = {"type": resource["type"], "name": resource["name"], "error_code": 0,
                  "error_message": None}
        try:
            updated = broker.topics.altered_topic(resource["name"], resource["configs"])
            if not body["validate_only"]:
                await broker.cluster_store.update_topic(updated)
        except (TopicError, ClusterError) as exc:
            result["error_code"], result["error_message"] = _failure(exc)
        results.append(result)
    return {"resources": results}


def _commit_code(broker: Broker, topic: str, entry: dict) -> int:
    """A commit names an existing partition (of the cluster's topics: in a cluster the broker
    storing offsets need not host a replica of it) and carries small metadata."""
    known = broker.topics.topics.get(topic)
    if known is None or not 0 <= entry["partition"] < known.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if len(entry["metadata"].encode()) > MAX_METADATA_BYTES:
        return ErrorCode.OFFSET_METADATA_TOO_LARGE
    return 0


def handle_offset_commit(broker: Broker, body: dict):
    group_id = body["group_id"]
    bad_group = group_id_problem(group_id) is not None
    offsets = {}
    topics_out = []
    for group in body["topics"]:
        parts_out = []
        for entry in group["partitions"]:
            code = ErrorCode.INVALID_GROUP_ID if bad_group else _commit_code(
                broker, group["topic"], entry)
            if code == 0:
                offsets[group["topic"], entry["partition"]] = (entry["offset"], entry["metadata"])
            parts_out.append({"partition": entry["partition"], "error_code": code})
        topics_out.append({"topic": group["topic"], "partitions": parts_out})
    response = {"topics": topics_out}
    if not offsets:
        return response
    return _commit_durably(broker, group_id, offsets, response)


async def _commit_durably(broker: Broker, group_id: str, offsets: dict, response: dict) -> dict:
    """Answer once the offsets are fsynced. A per-group asyncio lock (FIFO) keeps commits of
    one group in arrival order, so an older snapshot never lands after a newer one."""
    lock = broker.group_locks.setdefault(group_id, asyncio.Lock())
    try:
        async with lock:
            await broker.groups.commit(group_id, offsets)
    except OSError as exc:
        log.error("committing offsets of group %r failed: %r", group_id, exc)
        for group in response["topics"]:
            for result in group["partitions"]:
                if result["error_code"] == 0:
                    result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
    return response


def handle_offset_fetch(broker: Broker, body: dict) -> dict:
    committed = broker.groups.fetch(body["group_id"])
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


HANDLERS = {
    ApiKey.PRODUCE: handle_produce,
    ApiKey.FETCH: handle_fetch,
    ApiKey.LIST_OFFSETS: handle_list_offsets,
    ApiKey.METADATA: handle_metadata,
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.API_VERSIONS: handle_api_versions,
    ApiKey.CREATE_TOPICS: handle_create_topics,
    ApiKey.DELETE_TOPICS: handle_delete_topics,
    ApiKey.DESCRIBE_CONFIGS: handle_describe_configs,
    ApiKey.ALTER_CONFIGS: handle_alter_configs,
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: handle_offset_for_leader_epoch,
}
