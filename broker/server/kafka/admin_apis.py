"""Kafka's Metadata, CreateTopics, DeleteTopics and DescribeConfigs, served by tslog's native
handlers (``handlers.py``); DeleteRecords and InitProducerId are ``partition_apis.py``'s.

As in ``data_apis.py``: a Kafka body in, the native body to the native (gated) handler, its
answer back in Kafka's shape. What only the Kafka side knows is added here: Metadata lists
the brokers' *Kafka* addresses (``ClusterView.kafka_brokers``; a broker without a Kafka
listener is left out), topic ids are the null UUID (tslog names topics only; no version that
needs ids is advertised), and DescribeConfigs reports Kafka's config sources and types.

Refused, with INVALID_REQUEST and a message, rather than half-done: CreateTopics with
``validate_only`` or explicit replica ``assignments``. CreatePartitions (``kafka-topics --alter``)
and Metadata's creation of missing topics (``auto_create_topics_enable``) are here too.
"""

from __future__ import annotations

import uuid

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

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
    created = services.native[ApiKey.CREATE_TOPICS](
        {"topics": [{"topic": name, "partitions": -1, "replication_factor": -1, "configs": {}}
                    for name in missing], "timeout_ms": 0})
    return then(created, lambda native: _metadata(services, names, {
        r["topic"]: int(r["error_code"]) for r in native.get("topics", ())
        if int(r["error_code"]) not in (0, _EXISTS)}))


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
    entries, refused = [], {}
    for topic in body["topics"]:
        name = topic["name"]
        if body.get("validate_only"):
            refused[name] = "validate_only is not served by tslog's Kafka listener"
        elif topic["assignments"]:
            refused[name] = "replica assignments are chosen by tslog, not by the client"
        else:
            entries.append({"topic": name, "partitions": topic["num_partitions"],
                            "replication_factor": topic["replication_factor"],
                            "configs": {c["name"]: c["value"] for c in topic["configs"]
                                        if c["value"] is not None}})
    if not entries:
        return _created(services, body, {}, refused)
    result = services.native[ApiKey.CREATE_TOPICS]({"topics": entries,
                                                    "timeout_ms": max(body["timeout_ms"], 0)})
    return then(result, lambda native: _created(services, body, native, refused))


def _created(services: KafkaServices, body: dict, native: dict, refused: dict) -> dict:
    results = {r["topic"]: r for r in native.get("topics", ())}
    whole = None if "topics" in native or not native else native
    out = []
    for topic in body["topics"]:
        name = topic["name"]
        entry = {"name": name, "topic_id": _NULL_UUID, "num_partitions": -1,
                 "replication_factor": -1, "configs": None}
        result = results.get(name)
        if name in refused:
            entry.update(error_code=_INVALID_REQUEST, error_message=refused[name])
        elif result is None:
            entry.update(error_code=int((whole or {}).get("error_code", _INVALID_REQUEST)),
                         error_message=(whole or {}).get("error_message"))
        else:
            entry.update(error_code=int(result["error_code"]),
                         error_message=result.get("error_message"))
            created = services.topics.topics.get(name)
            if entry["error_code"] == 0 and created is not None:
                entry.update(num_partitions=created.partitions,
                             replication_factor=created.replication_factor,
                             configs=_topic_configs(services, name, None, 5))
        out.append(entry)
    return {"throttle_time_ms": 0, "topics": out}


def create_partitions(services: KafkaServices, body: dict, version: int,
                      info: KafkaRequestInfo):
    """``kafka-topics --alter --partitions N``: the native handler grows each topic (tslog
    places the new replicas itself, so explicit ``assignments`` are refused, as in
    CreateTopics)."""
    entries, refused = [], {}
    for topic in body["topics"]:
        if topic["assignments"]:
            refused[topic["name"]] = "replica assignments are chosen by tslog, not by the client"
        else:
            entries.append({"topic": topic["name"], "count": topic["count"]})

    def finish(native: dict) -> dict:
        results = {r["topic"]: r for r in native.get("topics", ())}
        out = []
        for topic in body["topics"]:
            name = topic["name"]
            result = results.get(name) or {"error_code": _INVALID_REQUEST,
                                           "error_message": refused.get(name)}
            out.append({"name": name, "error_code": int(result["error_code"]),
                        "error_message": result.get("error_message")})
        return {"throttle_time_ms": 0, "results": out}

    if not entries:
        return finish({})
    return then(services.native[ApiKey.CREATE_PARTITIONS](
        {"topics": entries, "validate_only": bool(body["validate_only"])}), finish)


def delete_topics(services: KafkaServices, body: dict, version: int, info: KafkaRequestInfo):
    names = body["topic_names"]
    result = services.native[ApiKey.DELETE_TOPICS]({"topics": list(names),
                                                    "timeout_ms": max(body["timeout_ms"], 0)})

    def finish(native: dict) -> dict:
        results = {r["topic"]: int(r["error_code"]) for r in native.get("topics", ())}
        whole = int(native.get("error_code", _INVALID_REQUEST))
        return {"throttle_time_ms": 0, "responses": [
            {"name": name, "error_code": results.get(name, whole), "error_message": None}
            for name in names]}

    return then(result, finish)


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
    kinds = {_TOPIC_RESOURCE: "topic", _BROKER_RESOURCE: "broker"}
    asked = [r for r in body["resources"] if r["resource_type"] in kinds]
    native = services.native[ApiKey.DESCRIBE_CONFIGS](
        {"resources": [{"type": kinds[r["resource_type"]], "name": r["resource_name"]}
                       for r in asked]})
    answers = iter(native.get("resources", ()))
    results = []
    for resource in body["resources"]:
        result = {"resource_type": resource["resource_type"],
                  "resource_name": resource["resource_name"], "configs": []}
        if resource["resource_type"] not in kinds:
            result.update(error_code=_INVALID_REQUEST,
                          error_message="tslog describes topics and brokers only")
        else:
            answer = next(answers, None)
            if answer is None:
                result.update(error_code=int(native.get("error_code", _INVALID_REQUEST)),
                              error_message=native.get("error_message"))
            else:
                result.update(error_code=int(answer["error_code"]),
                              error_message=answer.get("error_message"))
                result["configs"] = _config_entries(
                    _Entry.of(answer["configs"] + _dynamic(services, resource)),
                    resource["configuration_keys"], version)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _dynamic(services: KafkaServices, resource: dict) -> list[dict]:
    """A broker's replication rates set at run time (``replication_rates.py``)."""
    if resource["resource_type"] != _BROKER_RESOURCE or services.rates is None:
        return []
    return [{"name": e.name, "value": e.value, "source": "dynamic_broker"}
            for e in services.rates.entries()]


class _Entry:
    """A native DescribeConfigs entry (a dict) read like ``topics.ConfigEntry``."""

    __slots__ = ("name", "value", "source")

    def __init__(self, entry: dict) -> None:
        self.name, self.value, self.source = entry["name"], entry["value"], entry["source"]

    @classmethod
    def of(cls, entries: list[dict]) -> list["_Entry"]:
        return [cls(entry) for entry in entries]


ADMIN_ADAPTERS = {
    ApiKey.METADATA: metadata,
    ApiKey.CREATE_TOPICS: create_topics,
    ApiKey.DELETE_TOPICS: delete_topics,
    ApiKey.DESCRIBE_CONFIGS: describe_configs,
    ApiKey.CREATE_PARTITIONS: create_partitions,  # kafka-topics --alter --partitions
}
