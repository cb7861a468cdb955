"""``CommittedOffsets``: the consumer groups' committed offsets as the handlers use them.

Why a service around the store: commits of one group must land in arrival order (an older
snapshot must never overwrite a newer one), and a deleted topic's offsets must leave every
group whichever way the topic was deleted (this broker's disk or the cluster's etcd), and a
deleted group's offsets must go without a commit slipping in between. These rules are here once, over whichever store the broker opened with: ``GroupOffsetStore`` (one
file per group in the data directory) alone, ``EtcdGroupOffsetStore`` in a cluster.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from .offset_files import Offsets

log = logging.getLogger("tslog.broker.handlers")


class OffsetStore(Protocol):
    """Where committed offsets are kept (``offset_files`` or ``offset_etcd``)."""

    def fetch(self, group_id: str) -> Offsets: ...

    def all_groups(self) -> dict[str, Offsets]: ...

    async def commit(self, group_id: str, offsets: Offsets) -> None: ...

    async def forget_topic(self, group_id: str, topic: str) -> None: ...

    async def forget_partitions(self, group_id: str, partitions: list) -> None: ...

    async def forget_group(self, group_id: str) -> None: ...


class CommittedOffsets:
    """The store plus one FIFO lock per group, which keeps each group's writes in order."""

    def __init__(self, store: OffsetStore) -> None:
        self.store = store
        self._locks: dict[str, asyncio.Lock] = {}

    def fetch(self, group_id: str) -> Offsets:
        return self.store.fetch(group_id)

    def all_groups(self) -> dict[str, Offsets]:
        """Every group's offsets, from whichever store is in use now (the metrics' lag)."""
        return self.store.all_groups()

    def has_offsets(self, group_id: str) -> bool:
        """Whether the group has any committed offset (such a group exists for ListGroups,
        ConsumerGroupDescribe and DeleteGroups even if no member ever joined it)."""
        return bool(self.store.fetch(group_id))

    def group_lock(self, group_id: str) -> asyncio.Lock:
        """The FIFO lock that orders the group's offset writes. DeleteGroups holds it while it
        deletes the group's state and then its offsets, so no commit lands in between."""
        return self._locks.setdefault(group_id, asyncio.Lock())

    async def commit(self, group_id: str, offsets: Offsets) -> None:
        """Durable when it returns. Raises OSError (single node) when the write fails."""
        async with self.group_lock(group_id):
            await self.store.commit(group_id, offsets)

    async def forget_group(self, group_id: str) -> None:
        """Delete every committed offset of the group, durably (a deleted group, as in Kafka:
        a group made again under the name starts from its consumers' reset policy). The
        caller holds ``group_lock(group_id)``. Raises OSError."""
        await self.store.forget_group(group_id)

    async def forget_partitions(self, group_id: str, partitions: list) -> None:
        """Delete the group's committed offsets of ``partitions`` ((topic, partition) pairs),
        durably, in order with its commits (Kafka's OffsetDelete). Raises OSError."""
        async with self.group_lock(group_id):
            await self.store.forget_partitions(group_id, partitions)

    async def forget_topic(self, topic: str) -> None:
        """A deleted topic's committed offsets leave every group, as in Kafka: re-created
        under the same name, the topic must not hand a group its predecessor's offsets
        (past the new log end, a consumer would reset by its policy and, with ``latest``,
        skip records)."""
        for group_id, offsets in self.store.all_groups().items():
            if not any(tp[0] == topic for tp in offsets):
                continue
            try:
                async with self._locks.setdefault(group_id, asyncio.Lock()):
                    await self.store.forget_topic(group_id, topic)
            except OSError as exc:  # the topic is deleted all the same; logged for the operator
                log.error("dropping the committed offsets of deleted topic %s from group %r: %r",
                          topic, group_id, exc)
