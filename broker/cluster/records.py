"""The cluster's etcd key layout, the JSON of each value, and the local cache the watch keeps.

Layout under ``/<cluster_name>/`` (docs/cluster.md has the whole table):

- ``brokers/<node_id>``: ``{"host", "port"}`` (and ``"kafka_host", "kafka_port"`` with a Kafka
  listener), bound to the broker's lease (gone when it dies)
- ``controller``: ``{"node_id"}``, bound to the controller's lease; its create_revision is
  the controller epoch every controller write is fenced on
- ``topics/<name>``: ``{"partitions", "replication_factor", "configs", "topic_id"}``
- ``partitions/<topic>/<p>``: ``{"leader", "leader_epoch", "isr", "replicas"}`` (and
  ``"target", "adding"`` while a reassignment runs); the key's mod_revision is
  ``PartitionState.version``
- ``producer_ids``: ``{"next"}``, the next unallocated producer id block
- ``consumer_groups/<sha1 of group id>``: the group coordinator's record of one group, written
  by the controller only (``groups/state_etcd.py``); the cache ignores these keys

Why a cache applied from events: every broker answers Metadata and every ISR decision from
memory, in the order etcd applied the changes, without a round trip. No I/O here, so the
decoding rules are unit-tested on their own.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import NamedTuple

from ..metadata import TopicMetadata
from .view import NO_LEADER, PartitionState

log = logging.getLogger("tslog.broker.cluster")


class ClusterKeys:
    """Key names of one cluster (all str; etcd keys are their UTF-8 bytes)."""

    def __init__(self, cluster_name: str) -> None:
        self.prefix = f"/{cluster_name}/"
        self.brokers = self.prefix + "brokers/"
        self.controller = self.prefix + "controller"
        self.topics = self.prefix + "topics/"
        self.partitions = self.prefix + "partitions/"
        self.producer_ids = self.prefix + "producer_ids"
        self.group_states = self.prefix + "consumer_groups/"

    def broker(self, node_id: int) -> str:
        return f"{self.brokers}{node_id}"

    def topic(self, name: str) -> str:
        return self.topics + name

    def partition(self, topic: str, partition: int) -> str:
        return f"{self.partitions}{topic}/{partition}"

    def partitions_of(self, topic: str) -> str:
        return f"{self.partitions}{topic}/"

    def group_state(self, hashed_group_id: str) -> str:
        return self.group_states + hashed_group_id


def encode(document: dict) -> bytes:
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def encode_state(state: PartitionState) -> bytes:
    """The partition key's JSON; ``target`` and ``adding`` only while a reassignment runs,
    so a partition that never moved keeps the value it always had."""
    document = {"leader": state.leader, "leader_epoch": state.leader_epoch,
                "isr": list(state.isr), "replicas": list(state.replicas)}
    if state.target:
        document["target"] = list(state.target)
        document["adding"] = list(state.adding)
    return encode(document)


def decode_state(topic: str, partition: int, value: bytes, version: int) -> PartitionState:
    doc = json.loads(value)
    return PartitionState(topic, partition, int(doc["leader"]), int(doc["leader_epoch"]),
                          tuple(int(b) for b in doc["isr"]),
                          tuple(int(b) for b in doc["replicas"]), version,
                          tuple(int(b) for b in doc.get("target", ())),
                          tuple(int(b) for b in doc.get("adding", ())))


class TopicRecord(NamedTuple):
    metadata: TopicMetadata
    topic_id: str  # a fresh uuid per creation: a re-created name is a different topic
    version: int  # the topic key's mod_revision (config changes compare-and-swap on it)


def encode_topic(topic: TopicMetadata, topic_id: str) -> bytes:
    return encode({"partitions": topic.partitions, "replication_factor": topic.replication_factor,
                   "configs": dict(topic.configs), "topic_id": topic_id})


def decode_topic(name: str, value: bytes, version: int) -> TopicRecord:
    doc = json.loads(value)
    metadata = TopicMetadata(name, int(doc["partitions"]),
                             {str(k): str(v) for k, v in doc.get("configs", {}).items()},
                             int(doc.get("replication_factor", 1)))
    return TopicRecord(metadata, str(doc.get("topic_id", "")), version)


@dataclass
class Changes:
    """What one batch of watch events changed, for the listeners."""

    states: list[PartitionState] = field(default_factory=list)
    brokers_changed: bool = False
    controller_changed: bool = False
    topics_changed: bool = False

    def __bool__(self) -> bool:
        return bool(self.states or self.brokers_changed or self.controller_changed
                    or self.topics_changed)


class ClusterCache:
    """The last known value of every cluster key, applied in revision order."""

    def __init__(self, keys: ClusterKeys) -> None:
        self.keys = keys
        self.brokers: dict[int, tuple[str, int]] = {}
        # The Kafka listener's address of each broker that has one (docs/kafka.md).
        self.kafka_brokers: dict[int, tuple[str, int]] = {}
        self.broker_revisions: dict[int, int] = {}  # create_revision of each registration
        self.controller_id = NO_LEADER
        self.controller_revision = 0  # create_revision of the controller key (its epoch)
        self.topics: dict[str, TopicRecord] = {}
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.revision = 0  # highest mod revision applied

    def apply(self, key: str, value: bytes | None, mod_revision: int, create_revision: int,
              changes: Changes) -> None:
        """Apply one PUT (``value`` bytes) or DELETE (``value`` None). Values that do not
        decode are logged and skipped: a hand-edited key must not stop the broker."""
        self.revision = max(self.revision, mod_revision)
        try:
            self._apply(key, value, mod_revision, create_revision, changes)
        except (ValueError, KeyError, TypeError) as exc:
            log.error("ignoring undecodable etcd key %s: %r", key, exc)

    def _apply(self, key: str, value: bytes | None, mod_revision: int, create_revision: int,
               changes: Changes) -> None:
        keys = self.keys
        if key.startswith(keys.partitions):
            topic, _, number = key[len(keys.partitions):].rpartition("/")
            tp = (topic, int(number))
            if value is None:
                self.partitions.pop(tp, None)
                changes.topics_changed = True
                return
            current = self.partitions.get(tp)
            if current is not None and current.version >= mod_revision:
                return  # already applied (a proposal's own result came first)
            state = decode_state(topic, tp[1], value, mod_revision)
            self.partitions[tp] = state
            changes.states.append(state)
        elif key.startswith(keys.brokers):
            node_id = int(key[len(keys.brokers):])
            if value is None:
                self.brokers.pop(node_id, None)
                self.kafka_brokers.pop(node_id, None)
                self.broker_revisions.pop(node_id, None)
            else:
                doc = json.loads(value)
                self.brokers[node_id] = (str(doc["host"]), int(doc["port"]))
                if "kafka_port" in doc:
                    self.kafka_brokers[node_id] = (str(doc["kafka_host"]), int(doc["kafka_port"]))
                else:
                    self.kafka_brokers.pop(node_id, None)
                self.broker_revisions[node_id] = create_revision
            changes.brokers_changed = True
        elif key == keys.controller:
            if value is None:
                self.controller_id, self.controller_revision = NO_LEADER, 0
            else:
                self.controller_id = int(json.loads(value)["node_id"])
                self.controller_revision = create_revision
            changes.controller_changed = True
        elif key.startswith(keys.topics):
            name = key[len(keys.topics):]
            if value is None:
                self.topics.pop(name, None)
            else:
                self.topics[name] = decode_topic(name, value, mod_revision)
            changes.topics_changed = True

    def note_state(self, state: PartitionState) -> bool:
        """Take a state this broker just wrote, ahead of its watch event. True if newer."""
        current = self.partitions.get((state.topic, state.partition))
        if current is not None and current.version >= state.version:
            return False
        self.partitions[state.topic, state.partition] = state
        return True
