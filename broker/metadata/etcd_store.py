"""``EtcdMetadataStore``: topics of an etcd-backed cluster, created and changed by any broker.

Not a ``MetadataStore``: its changes are coroutines (``create_topic``, ``remove_topic``,
``update_topic``, ``add_partitions``), which the CreateTopics, DeleteTopics, AlterConfigs and
CreatePartitions handlers await when the broker is clustered; ``topics()`` is the only
synchronous read. Why async where
``LocalMetadataStore`` is not: a topic change is an etcd transaction, and the
broker that received the request answers only after its own watch has applied the change
(so a client that creates a topic and at once asks this broker for Metadata sees it, and the
local replicas' logs exist). The other brokers learn it from their watches.

Creation writes the topic key and every partition's initial state (replicas round-robin
over the live brokers, leader = first replica, epoch 0, ISR = replicas) in one transaction
that requires the topic key to be absent. etcd caps a transaction at 128 operations, so a
topic with more partitions writes the rest in further transactions; should the writer die in
between, the controller gives the missing partitions their initial state.

Adding partitions is the same: the topic key's new count (compare-and-swap on its version)
and the new partitions' initial states, replicas continuing the topic's round-robin, so the
controller's gap filling would assign them alike.
"""

from __future__ import annotations

import uuid

from tslog.protocol.errors import ErrorCode

from ..cluster.controller import assign_replicas
from ..cluster.etcd_view import EtcdClusterView
from ..cluster.records import encode_state, encode_topic
from ..cluster.view import PartitionState
from ..topics import TopicError
from .store import TopicMetadata

MAX_TXN_OPS = 128  # etcd's default --max-txn-ops


class EtcdMetadataStore:
    def __init__(self, view: EtcdClusterView, timeout_s: float) -> None:
        self.view = view
        self.timeout_s = timeout_s  # how long to wait for our own watch to apply a change

    def topics(self) -> dict[str, TopicMetadata]:
        return {name: record.metadata for name, record in self.view.cache.topics.items()}

    async def create_topic(self, topic: TopicMetadata) -> None:
        """Create ``topic`` (replication_factor resolved) with its partitions' states.
        Raises TopicError (INVALID_REPLICATION_FACTOR, TOPIC_ALREADY_EXISTS)."""
        view = self.view
        etcd, keys = view.etcd, view.keys
        live = sorted(view.brokers())
        if topic.replication_factor > len(live):
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"replication factor {topic.replication_factor} is larger than "
                             f"the {len(live)} live broker(s)")
        if topic.name in view.cache.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} already exists")
        puts = self._initial_states(topic, 0, live)
        topic_key = keys.topic(topic.name)
        ok, revision = await etcd.txn(
            [etcd.absent(topic_key)],
            [etcd.put(topic_key, encode_topic(topic, uuid.uuid4().hex)), *puts[:MAX_TXN_OPS - 1]])
        if not ok:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic.name!r} already exists")
        await self._write_rest(topic_key, revision, puts[MAX_TXN_OPS - 1:])

    async def add_partitions(self, grown: TopicMetadata) -> None:
        """Raise a topic's partition count to ``grown.partitions`` (validated larger) and
        write the new partitions' initial states. Raises TopicError: UNKNOWN_TOPIC_OR_PARTITION
        if it is gone, INVALID_REPLICATION_FACTOR if too few brokers are live, INVALID_REQUEST
        on a concurrent change (the client may retry)."""
        view = self.view
        etcd, keys = view.etcd, view.keys
        record = view.cache.topics.get(grown.name)
        if record is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {grown.name!r}")
        live = sorted(view.brokers())
        if grown.replication_factor > len(live):
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"replication factor {grown.replication_factor} is larger than "
                             f"the {len(live)} live broker(s)")
        current = record.metadata
        grown = current._replace(partitions=grown.partitions)
        puts = self._initial_states(grown, current.partitions, live)
        topic_key = keys.topic(grown.name)
        ok, revision = await etcd.txn(
            [etcd.mod_is(topic_key, record.version)],
            [etcd.put(topic_key, encode_topic(grown, record.topic_id)), *puts[:MAX_TXN_OPS - 1]])
        if not ok:
            raise TopicError(ErrorCode.INVALID_REQUEST,
                             f"topic {grown.name!r} changed concurrently; try again")
        await self._write_rest(topic_key, revision, puts[MAX_TXN_OPS - 1:])

    def _initial_states(self, topic: TopicMetadata, first: int, live: list[int]) -> list:
        """Puts of the initial states of partitions ``first``.. of ``topic``: replicas
        round-robin over the live brokers, leader = first replica, epoch 0, ISR = replicas."""
        etcd, keys = self.view.etcd, self.view.keys
        assignment = assign_replicas(topic.name, topic.partitions, topic.replication_factor, live)
        return [etcd.put(keys.partition(topic.name, p),
                         encode_state(PartitionState(topic.name, p, r[0], 0, r, r, 0)))
                for p, r in enumerate(assignment) if p >= first]

    async def _write_rest(self, topic_key: str, revision: int, rest: list) -> None:
        """Write what did not fit in the first transaction, then wait for our watch."""
        etcd = self.view.etcd
        for start in range(0, len(rest), MAX_TXN_OPS - 1):
            chunk = rest[start:start + MAX_TXN_OPS - 1]
            ok, written = await etcd.txn([etcd.mod_is(topic_key, revision)], chunk)
            if not ok:  # deleted or changed meanwhile; the controller fills gaps if needed
                break
            revision = written
        await self.view.wait_for_revision(revision, self.timeout_s)

    async def remove_topic(self, name: str) -> None:
        """Remove the topic key and its partition states in one transaction. Raises
        TopicError(UNKNOWN_TOPIC_OR_PARTITION)."""
        view = self.view
        etcd, keys = view.etcd, view.keys
        ok, revision = await etcd.txn(
            [etcd.exists(keys.topic(name))],
            [etcd.delete(keys.topic(name)), etcd.delete_prefix(keys.partitions_of(name))])
        if not ok:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        await view.wait_for_revision(revision, self.timeout_s)

    async def update_topic(self, topic: TopicMetadata) -> None:
        """Replace a topic's configs, compare-and-swap on the version this broker knows.
        Raises TopicError(UNKNOWN_TOPIC_OR_PARTITION) if it is gone, or INVALID_REQUEST on
        a concurrent change (the client may retry)."""
        view = self.view
        etcd, keys = view.etcd, view.keys
        record = view.cache.topics.get(topic.name)
        if record is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic.name!r}")
        ok, revision = await etcd.txn(
            [etcd.mod_is(keys.topic(topic.name), record.version)],
            [etcd.put(keys.topic(topic.name), encode_topic(topic, record.topic_id))])
        if not ok:
            raise TopicError(ErrorCode.INVALID_REQUEST,
                             f"topic {topic.name!r} changed concurrently; try again")
        await view.wait_for_revision(revision, self.timeout_s)
