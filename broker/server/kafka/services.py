"""What a Kafka adapter is given: the data service and the native handlers, gated, plus
what translation reads.

Produce, Fetch, ListOffsets and Metadata call the data service (``broker/data``) with typed
requests, as tslog's own handlers do; with the authorizer on, through the connection's
``GatedData`` (``security/request_gate.py``), the same gate the native port uses.
DeleteRecords, InitProducerId, the reassignment APIs, ElectLeaders and DescribeLogDirs call
the partition admin service (``broker/admin``) likewise, through the connection's
``GatedPartitionAdmin``; the topic and config APIs (Create/DeleteTopics, CreatePartitions,
Describe/AlterConfigs, IncrementalAlterConfigs, Metadata's creation of missing topics) call
the topic admin service (``broker/admin``), through ``GatedTopicAdmin``
(``security/topic_admin_gate.py``).

The APIs no typed service serves yet go through the native handlers: the issue asks that
Kafka requests be served by "the same handlers the native protocol uses", so validation,
durability (acks), idempotence, long polls and ACLs live in one place. ``native`` is the
broker's dispatch table (``dispatch.bind_handlers``), bound per connection through the
``RequestGate`` when the authorizer is on, exactly as a native connection binds it: a Kafka
request is authorized for the connection's principal by the same rules (Kafka's operation
per API).

The rest is read-only context the translation needs and the native bodies do not carry: the
topic catalog (each topic's ``message.timestamp.type`` decides how batches and time lookups
are translated), the cluster view (brokers' Kafka addresses, partition leader epochs) and
the broker's settings.

The group adapters (``group_apis.py``, ``group_admin_apis.py``, ``offset_delete_api.py``)
call the group service (``broker/groups/api.py``) with typed requests, as tslog's own
handlers do; with the authorizer on, through the connection's ``GatedGroups``
(``security/group_gate.py``), the gate tslog's own group requests pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ...cluster.view import ClusterView
from ...config import BrokerConfig
from ...topics import TopicManager
from ...security.acl import Authorizer
from .replication_rates import ReplicationRates


@dataclass(slots=True)
class ProduceOrder:
    """Per connection: the last Produce still converting off the loop (its future is done
    once its batches were handed to the data service), so later ones append after it."""

    tail: Any = None


@dataclass(frozen=True, slots=True)
class KafkaServices:
    native: dict[int, Callable[[dict], Any]]  # ApiKey -> bound (and gated) native handler
    data: Any  # the data service, or the connection's ``GatedData`` in front of it
    topics: TopicManager
    cluster: ClusterView
    config: BrokerConfig
    authorizer: Authorizer | None  # for adapters that check ACLs themselves (info.principal)
    group_api: Any  # the group service, or the connection's ``GatedGroups`` in front of it
    produce_order: ProduceOrder = field(default_factory=ProduceOrder)  # this connection's
    rates: ReplicationRates | None = None  # the broker's run-time replication throttles
    # the partition admin service (``broker/admin``), or the connection's
    # ``GatedPartitionAdmin`` in front of it: DeleteRecords, InitProducerId, reassignments,
    # elections, DescribeLogDirs
    partition_admin: Any = None
    # the topic admin service (``broker/admin``), or the connection's ``GatedTopicAdmin``:
    # Create/DeleteTopics, CreatePartitions, Describe/Alter/IncrementalAlterConfigs
    topic_admin: Any = None

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
