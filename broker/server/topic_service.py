"""Topic changes (CreateTopics, CreatePartitions, DeleteTopics, AlterConfigs): one interface
(``admin.topics.TopicChanges``, on the admin service's typed entries), two ways to do it.

Why an interface: a single broker writes its topic records and logs itself, while a
clustered broker only validates and writes the change to etcd, where every broker's watch
(``cluster_sync``) applies it to its local logs. The broker picks ``LocalTopicService`` or
``ClusterTopicService`` once, when it opens; the topic admin service (``broker/admin``) calls
whichever it picked and never asks which it is.

Both validate with the broker's ``TopicManager`` first, answer per topic (an error code and a
message: the topic's own error, the local disk failing, or etcd being unreachable) and drop
a deleted topic's committed offsets from every group.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Protocol

from tslog.protocol.errors import ErrorCode

from ..cluster.errors import ClusterError
from ..metadata import TopicMetadata
from ..metrics.definitions import forget_topic
from ..topics import TopicError, TopicManager
from ..groups.committed_offsets import CommittedOffsets
from ..data.error_codes import error_code_for
from ..admin.requests import ConfigChange, ConfigsAltered, NewPartitions, NewTopic, TopicResult

log = logging.getLogger("tslog.broker.handlers")


class LocalTopicService:
    """A single broker's topic changes: records and logs on its own disk.

    Validated on the loop, written in a thread (records and empty logs are fsynced: about
    1 ms a partition here), then served: other clients are never held up by the disk. One
    topic change at a time (``_lock``), so two creations of a name cannot race.
    """

    def __init__(self, topics: TopicManager, notify: Callable[[object], None],
                 offsets: CommittedOffsets) -> None:
        self.topics = topics
        self.notify = notify  # wakes long polls on a deleted log (they answer at once)
        self.offsets = offsets
        self._lock = asyncio.Lock()

    async def create_topics(self, entries: list[NewTopic]) -> list[TopicResult]:
        topics = self.topics

        async def create(entry: NewTopic) -> None:
            topic = topics.validate_new_topic(entry.topic, entry.partitions,
                                              entry.replication_factor, entry.configs)
            written = await asyncio.to_thread(topics.write_new_topic, topic)
            topics.publish_topic(topic, written)

        return await self._each_topic(entries, create, "create topic")

    async def create_partitions(self, entries: list[NewPartitions],
                                validate_only: bool) -> list[TopicResult]:
        """Validated on the loop; the record and the new empty logs written in a thread;
        then the new partitions are served. Existing partitions are not touched."""
        topics = self.topics

        async def grow(entry: NewPartitions) -> None:
            grown = topics.grown_topic(entry.topic, entry.count)
            if not validate_only:
                logs = await asyncio.to_thread(topics.write_new_partitions, grown)
                topics.publish_partitions(grown, logs)

        return await self._each_topic(entries, grow, "add partitions to")

    async def _each_topic(self, entries: list, change, what: str) -> list[TopicResult]:
        """Run ``change`` on each entry, one at a time under the lock; a TopicError or OSError
        becomes that topic's error code and message, the others go on."""
        results = []
        async with self._lock:
            for entry in entries:
                try:
                    await change(entry)
                except (TopicError, OSError) as exc:
                    results.append(TopicResult(entry.topic,
                                               *failure(exc, f"{what} {entry.topic}")))
                else:
                    results.append(TopicResult(entry.topic, 0, None))
        return results

    async def delete_topics(self, names: list[str]) -> list[TopicResult]:
        """The record goes first (in a thread; a journal entry that needs no free space),
        then the topic stops being served (on the loop), then its files go (in a thread),
        which on a full disk makes the room to rewrite the record: a failed record write
        changes nothing."""
        topics = self.topics
        results = []
        async with self._lock:
            for name in names:
                code = 0
                try:
                    await asyncio.to_thread(topics.forget_topic_durably, name)
                    removed = topics.unpublish_topic(name)
                    for plog in removed:
                        self.notify(plog)  # long polls answer UNKNOWN_TOPIC_OR_PARTITION
                    forget_topic(name)
                except (TopicError, OSError) as exc:
                    code = failure(exc, f"delete topic {name}")[0]
                else:
                    try:
                        await asyncio.to_thread(topics.finish_deletion, name, removed)
                    except OSError as exc:  # the topic is gone; leftovers go at the next start
                        log.error("deleting the files of topic %s: %r", name, exc)
                    await self.offsets.forget_topic(name)
                results.append(TopicResult(name, code, None))
        return results

    async def alter_configs(self, resources: list[ConfigChange],
                            validate_only: bool) -> list[ConfigsAltered]:
        """Validated on the loop, stored durably in a thread, then applied to the live logs."""
        topics = self.topics
        results = []
        async with self._lock:
            for resource in resources:
                kind, name = resource.type, resource.name
                try:
                    updated = topics.altered_topic(name, resource.configs)
                    if not validate_only:
                        await asyncio.to_thread(topics.store.put_topic, updated)
                        topics.apply_topic_configs(updated)
                except (TopicError, OSError) as exc:
                    results.append(ConfigsAltered(kind, name, *failure(
                        exc, f"alter configs of {name}")))
                else:
                    results.append(ConfigsAltered(kind, name, 0, None))
        return results


class ClusterTopicStore(Protocol):
    """The cluster's topic records (``metadata.etcd_store.EtcdMetadataStore``); named by
    what is used so a single node never imports the etcd client."""

    async def create_topic(self, topic: TopicMetadata) -> None: ...

    async def remove_topic(self, name: str) -> None: ...

    async def update_topic(self, topic: TopicMetadata) -> None: ...

    async def add_partitions(self, grown: TopicMetadata) -> None: ...


class ClusterTopicService:
    """A clustered broker's topic changes: validated here, one etcd transaction per topic.
    Every broker's watch then creates, deletes or reconfigures its local logs."""

    def __init__(self, topics: TopicManager, store: ClusterTopicStore,
                 offsets: CommittedOffsets) -> None:
        self.topics = topics
        self.store = store
        self.offsets = offsets

    async def create_topics(self, entries: list[NewTopic]) -> list[TopicResult]:
        results = []
        for entry in entries:
            try:
                topic = self.topics.validate_new_topic(
                    entry.topic, entry.partitions, entry.replication_factor,
                    entry.configs, clustered=True)
                await self.store.create_topic(topic)
            except (TopicError, ClusterError) as exc:
                results.append(TopicResult(entry.topic, *failure(exc)))
            else:
                results.append(TopicResult(entry.topic, 0, None))
        return results

    async def create_partitions(self, entries: list[NewPartitions],
                                validate_only: bool) -> list[TopicResult]:
        """The new count and the new partitions' states in etcd; every broker's watch then
        opens the logs of the new replicas it holds."""
        results = []
        for entry in entries:
            try:
                grown = self.topics.grown_topic(entry.topic, entry.count)
                if not validate_only:
                    await self.store.add_partitions(grown)
            except (TopicError, ClusterError) as exc:
                results.append(TopicResult(entry.topic, *failure(exc)))
            else:
                results.append(TopicResult(entry.topic, 0, None))
        return results

    async def delete_topics(self, names: list[str]) -> list[TopicResult]:
        """Removed from etcd; the groups' committed offsets of it are deleted in etcd here."""
        results = []
        for name in names:
            code = 0
            try:
                await self.store.remove_topic(name)
            except (TopicError, ClusterError) as exc:
                code = failure(exc)[0]
            else:
                await self.offsets.forget_topic(name)
            results.append(TopicResult(name, code, None))
        return results

    async def alter_configs(self, resources: list[ConfigChange],
                            validate_only: bool) -> list[ConfigsAltered]:
        results = []
        for kind, name, configs in resources:
            try:
                updated = self.topics.altered_topic(name, configs)
                if not validate_only:
                    await self.store.update_topic(updated)
            except (TopicError, ClusterError) as exc:
                results.append(ConfigsAltered(kind, name, *failure(exc)))
            else:
                results.append(ConfigsAltered(kind, name, 0, None))
        return results


def failure(exc: TopicError | ClusterError | OSError, what: str = "") -> tuple[int, str]:
    """(error code, message) a topic or config change answers for ``exc``: the topic's own
    error, etcd being unreachable (clustered), or the local disk failing (single node; both
    logged here, as the client only sees a code)."""
    if isinstance(exc, TopicError):
        return exc.error_code, exc.message
    if isinstance(exc, OSError):
        return error_code_for(exc, what), f"storage error: {exc}"
    log.warning("cluster metadata change failed: %s", exc)
    return ErrorCode.REQUEST_TIMED_OUT, "the cluster's metadata store (etcd) is unreachable"
