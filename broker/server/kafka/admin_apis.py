"""Kafka's Metadata, CreateTopics, DeleteTopics, CreatePartitions and DescribeConfigs
(DeleteRecords and InitProducerId are ``partition_apis.py``'s).

Metadata is served by the data service (``broker/data``); CreateTopics, DeleteTopics,
CreatePartitions, DescribeConfigs and Metadata's creation of missing topics
(``auto_create_topics_enable``) by the topic admin service (``broker/admin``): a Kafka body
in, translated once into the typed request, the (gated) service's results back in Kafka's
shape, as in ``data_apis.py``.

What only the Kafka side knows is added here: Metadata lists the brokers' *Kafka* addresses
(``ClusterView.kafka_brokers``; a broker without a Kafka listener is left out), topic ids
are the null UUID (tslog names topics only; no version that needs ids is advertised), and
DescribeConfigs reports Kafka's config sources and types, and a broker's run-time rates.

Refused, with INVALID_REQUEST and a message, rather than half-done: CreateTopics with
``validate_only`` or explicit replica ``assignments``, and CreatePartitions with
``assignments`` (``kafka-topics --alter`` sends none).
"""

from __future__ import annotations

import uuid

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ...admin.requests import (
    ConfigEntry,
    ConfigResource,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    NewPartitions,
    NewTopic,
)
from ...storage.config import CHOICES
from ...topics import TopicError
from ...data.requests import MetadataRequest
from .request_info import KafkaRequestInfo
from .services import KafkaServices
from .data_apis import then

_NULL_UUID = uuid.UUID(int=0)
_INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)
_EXISTS = int(ErrorCode.TOPIC_ALREADY_EXISTS)  # created meanwhile by another client
# Kafka's DescribeConfigs sources and types (DescribeConfigsResponse.json).
# DYNAMIC_TOPIC, DYNAMIC_BROKER (rates set at run time), STATIC_BROKER, DEFAULT
_SOURCE = {"topic": 1, "dynamic_broker": 2, "broker": 4, "default": 5}
_STRING, _LONG = 2, 5
_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4


# ------------------------------------------------------------------------------- metadata


def metadata(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    topics = body["topics"]
    names = None if topics is None or (version == 0 and not topics) else \
        [t["name"] for t in topics if t.get("name") is not None]
    missing = _to_create(services, body, version, names)
    if not missing:
        return _metadata(services, names, {})
    created = services.topic_admin.create_topics(CreateTopicsRequest(
        [NewTopic(name, -1, -1, {}) for name in missing], 0))
    return then(created, lambda results: _metadata(services, names, {
        r.topic: r.error_code for r in results if r.error_code not in (0, _EXISTS)}))


def _to_create(services: KafkaServices, body: dict, version: int, names) -> list[str]:
    """Kafka's ``auto.create.topics.enable``: the named topics that do not exist, when the
    broker allows it and the client asks for it (``allow_auto_topic_creation``, v4+; always
    before v4). Created like ``CreateTopics`` with the defaults (``num_partitions``), through
    the same gate (ACL Create) and the same validation."""
    if not services.config.auto_create_topics_enable or not names:
        return []
    if version >= 4 and not body.get("allow_auto_topic_creation", True):
        return []
    return [name for name in dict.fromkeys(names) if name not in services.topics.topics]


def _kafka_partitions(entries) -> list[dict]:
    """A kept partition list in Kafka's shape: made once per list (``KeptPartitions``)."""
    return [{"error_code": code, "partition_index": partition, "leader_id": leader,
             "leader_epoch": epoch, "replica_nodes": replicas, "isr_nodes": isr,
             "offline_replicas": []}
            for partition, code, leader, epoch, replicas, isr in entries]


def _metadata(services: KafkaServices, names, refused: dict[str, int]) -> dict:
    """The Metadata answer; ``refused`` carries why an auto-creation failed (an invalid
    name: INVALID_TOPIC_EXCEPTION, as Kafka answers) in place of UNKNOWN_TOPIC_OR_PARTITION."""
    found = services.data.metadata(MetadataRequest(names))
    brokers = [{"node_id": node, "host": host, "port": port, "rack": None}
               for node, (host, port) in sorted(found.cluster.kafka_brokers().items())]
    out = [{"error_code": refused.get(topic, code), "name": topic, "topic_id": _NULL_UUID,
            "is_internal": False, "topic_authorized_operations": -2147483648,
            "partitions": [] if kept is None else kept.encoded(_kafka_partitions)}
           for topic, code, kept in found.topics]
    return {"throttle_time_ms": 0, "brokers": brokers,
            "cluster_id": services.config.cluster_name,
            "controller_id": found.controller_id, "topics": out,
            "cluster_authorized_operations": -2147483648}


# --------------------------------------------------------------------------- create/delete


def create_topics(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    """Each topic the typed service may create, in the request's order; ``refused`` holds,
    per topic of the body, why tslog refuses it without asking the service (or None)."""
    entries, refused = [], []
    for topic in body["topics"]:
        if body.get("validate_only"):
            refused.append("validate_only is not served by tslog's Kafka listener")
        elif topic["assignments"]:
            refused.append("replica assignments are chosen by tslog, not by the client")
        else:
            refused.append(None)
            entries.append(NewTopic(topic["name"], topic["num_partitions"],
                                    topic["replication_factor"],
                                    {c["name"]: c["value"] for c in topic["configs"]
                                     if c["value"] is not None}))
    if not entries:
        return _created(services, body, [], refused)
    result = services.topic_admin.create_topics(CreateTopicsRequest(
        entries, max(body["timeout_ms"], 0)))
    return then(result, lambda results: _created(services, body, results, refused))


def _created(services: KafkaServices, body: dict, results: list, refused: list) -> dict:
    served = iter(results)
    out = []
    for topic, why in zip(body["topics"], refused):
        name = topic["name"]
        entry = {"name": name, "topic_id": _NULL_UUID, "num_partitions": -1,
                 "replication_factor": -1, "configs": None}
        if why is not None:
            entry.update(error_code=_INVALID_REQUEST, error_message=why)
        else:
            result = next(served)
            entry.update(error_code=result.error_code, error_message=result.error_message)
            created = services.topics.topics.get(name)
            if result.error_code == 0 and created is not None:
                entry.update(num_partitions=created.partitions,
                             replication_factor=created.replication_factor,
                             configs=_topic_configs(services, name, None, 5))
        out.append(entry)
    return {"throttle_time_ms": 0, "topics": out}


def create_partitions(services: KafkaServices, body: dict, version: int,
                      info: KafkaRequestInfo):
    """``kafka-topics --alter --partitions N``: the typed service grows each topic (tslog
    places the new replicas itself, so explicit ``assignments`` are refused, as in
    CreateTopics)."""
    entries = [NewPartitions(topic["name"], topic["count"]) for topic in body["topics"]
               if not topic["assignments"]]

    def finish(results: list) -> dict:
        served = iter(results)
        out = []
        for topic in body["topics"]:
            if topic["assignments"]:
                out.append({"name": topic["name"], "error_code": _INVALID_REQUEST,
                            "error_message": "replica assignments are chosen by tslog, not "
                                             "by the client"})
            else:
                result = next(served)
                out.append({"name": topic["name"], "error_code": result.error_code,
                            "error_message": result.error_message})
        return {"throttle_time_ms": 0, "results": out}

    if not entries:
        return finish([])
    return then(services.topic_admin.create_partitions(CreatePartitionsRequest(
        entries, bool(body["validate_only"]))), finish)


def delete_topics(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    """A code per topic and no message, as tslog's own DeleteTopics answers."""
    result = services.topic_admin.delete_topics(DeleteTopicsRequest(
        list(body["topic_names"]), max(body["timeout_ms"], 0)))
    return then(result, lambda results: {"throttle_time_ms": 0, "responses": [
        {"name": r.topic, "error_code": r.error_code, "error_message": None}
        for r in results]})


# ------------------------------------------------------------------------------- configs


def _topic_configs(services: KafkaServices, name: str, keys, version: int) -> list[dict] | None:
    try:
        entries = services.topics.describe_topic_configs(name)
    except TopicError:  # deleted again since
        return None
    return _config_entries(entries, keys, version)


def _config_entries(entries, keys, version: int) -> list[dict]:
    wanted = None if keys is None else set(keys)
    return [{"name": e.name, "value": e.value, "read_only": False,
             "is_default": e.source == "default", "config_source": _SOURCE[e.source],
             "is_sensitive": False, "synonyms": [],
             "config_type": _STRING if e.name in CHOICES else _LONG, "documentation": None}
            for e in entries if wanted is None or e.name in wanted]


def describe_configs(services: KafkaServices, body: dict, version: int,
                     info: KafkaRequestInfo):
    """Topics and brokers, through the typed service (one call for the request); any
    other resource type is refused here. A broker's answer adds its run-time rates."""
    kinds = {_TOPIC_RESOURCE: "topic", _BROKER_RESOURCE: "broker"}
    answers = iter(services.topic_admin.describe_configs(DescribeConfigsRequest(
        [ConfigResource(kinds[r["resource_type"]], r["resource_name"])
         for r in body["resources"] if r["resource_type"] in kinds])))
    results = []
    for resource in body["resources"]:
        result = {"resource_type": resource["resource_type"],
                  "resource_name": resource["resource_name"], "configs": []}
        if resource["resource_type"] not in kinds:
            result.update(error_code=_INVALID_REQUEST,
                          error_message="tslog describes topics and brokers only")
        else:
            answer = next(answers)
            result.update(error_code=answer.error_code, error_message=answer.error_message)
            if answer.error_code == 0:
                result["configs"] = _config_entries(
                    answer.configs + _dynamic(services, resource),
                    resource["configuration_keys"], version)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _dynamic(services: KafkaServices, resource: dict) -> list[ConfigEntry]:
    """A broker's replication rates set at run time (``replication_rates.py``)."""
    if resource["resource_type"] != _BROKER_RESOURCE or services.rates is None:
        return []
    return [ConfigEntry(e.name, e.value, "dynamic_broker") for e in services.rates.entries()]


ADMIN_ADAPTERS = {
    ApiKey.METADATA: metadata,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.DESCRIBE_CONFIGS: describe_configs,
    ApiKey.CREATE_PARTITIONS: create_partitions,  # kafka-topics --alter --partitions
}
