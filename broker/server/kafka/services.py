"""What a Kafka adapter is given: the typed services, judged for its connection, plus what
translation reads.

Every Kafka API is served by the typed service tslog's own port serves it with, each
adapter translating once, at its edge: Produce, Fetch, ListOffsets and Metadata by the data
service (``broker/data``); the group APIs by the group service (``broker/groups/api.py``);
DeleteRecords, InitProducerId, the reassignment APIs, ElectLeaders and DescribeLogDirs by
the partition admin service (``broker/admin/partitions.py``); the topic and config APIs
(Create/DeleteTopics, CreatePartitions, Describe/AlterConfigs, IncrementalAlterConfigs,
Metadata's creation of missing topics) by the topic admin service
(``broker/admin/topics.py``). With the authorizer on, each is the connection's wrapper of
the service (``GatedData``, ``GatedGroups``, ``GatedPartitionAdmin``, ``GatedTopicAdmin``):
the same gate, judging the same typed requests, as tslog's own port passes
(``services_for``).

The rest is read-only context the translation needs and the typed requests do not carry:
the topic catalog (each topic's ``message.timestamp.type`` decides how batches and time
lookups are translated), the cluster view (brokers' Kafka addresses, partition leader
epochs), the broker's settings and its run-time replication throttles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...cluster.view import ClusterView
from ...config import BrokerConfig
from ...topics import TopicManager
from ...security.request_gate import (
    GatedData,
    GatedGroups,
    GatedPartitionAdmin,
    GatedTopicAdmin,
)
from .replication_rates import ReplicationRates


@dataclass(slots=True)
class ProduceOrder:
    """Per connection: the last Produce still converting off the loop (its future is done
    once its batches were handed to the data service), so later ones append after it."""

    tail: Any = None


@dataclass(frozen=True, slots=True)
class KafkaServices:
    data: Any  # the data service, or the connection's ``GatedData`` in front of it
    group_api: Any  # the group service, or the connection's ``GatedGroups``
    partition_admin: Any  # the partition admin service, or ``GatedPartitionAdmin``
    topic_admin: Any  # the topic admin service, or ``GatedTopicAdmin``
    topics: TopicManager
    cluster: ClusterView
    config: BrokerConfig
    produce_order: ProduceOrder = field(default_factory=ProduceOrder)  # this connection's
    rates: ReplicationRates | None = None  # the broker's run-time replication throttles

    def kafka_address(self, node_id: int) -> tuple[str, int] | None:
        """Where broker ``node_id``'s Kafka listener is (None: it has none we know of)."""
        return self.cluster.kafka_brokers().get(node_id)

    def timestamp_type(self, topic: str, partition: int) -> str:
        """The partition's ``message.timestamp.type``, read from its open log's config (kept
        current by AlterConfigs), so a request pays a dict lookup per partition. A partition
        not hosted here answers LogAppendTime; the native handler refuses it anyway."""
        plog = self.topics.logs.get((topic, partition))
        return "LogAppendTime" if plog is None else plog.config.message_timestamp_type

    def batch_limit(self, topic: str, partition: int) -> int | None:
        """The largest batch the partition's open log takes (``max.message.bytes``, or
        ``segment.bytes`` if smaller), None for a partition not hosted here."""
        plog = self.topics.logs.get((topic, partition))
        return None if plog is None else min(plog.config.max_message_bytes,
                                             plog.config.segment_bytes)


def services_for(broker, connection) -> KafkaServices:
    """The services of one Kafka connection: each of ``broker``'s typed services behind the
    connection's wrapper of it when the authorizer is on (``broker.gate``), else as is."""
    gate = broker.gate

    def judged(wrapper, service):
        return service if gate is None else gate.wrap(wrapper, service, connection)
    return KafkaServices(judged(GatedData, broker.data), judged(GatedGroups, broker.group_api),
                         judged(GatedPartitionAdmin, broker.partition_admin),
                         judged(GatedTopicAdmin, broker.topic_admin), broker.topics,
                         broker.cluster, broker.config, rates=broker.rates)
