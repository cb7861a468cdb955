"""Committed consumer-group offsets of a cluster, kept in etcd.

Why not the controller's data directory: the controller changes on failover, and a new
controller must answer OffsetFetch with every offset acknowledged before, or consumers
silently replay (or skip) data. etcd is already the cluster's durable, replicated store, so
an OffsetCommit is answered once etcd has applied it, as a partition state change is.

Layout: one key per group and partition, ``/<cluster>/groups/<sha1 of group id>/<topic>/
<partition>``, holding JSON ``{"group_id", "offset", "metadata"}``. One key per partition (not
one document per group) means commits from two brokers for different partitions of a group
can never overwrite each other; one transaction per commit keeps a commit all or nothing.
Hashing the group id keeps any id (slashes, unicode) a single key segment.

Every broker watches the prefix into a cache, so OffsetFetch and the lag metrics read memory,
and a broker that just committed reads its own write at once (the cache is updated before
the commit is answered). Deleting a topic deletes its keys under every group (one prefix
delete per group), deleting a group all of its keys (one prefix delete); a delete event
names the group only by its hash, so the cache finds it, and a group left without keys
leaves the cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging

from ..cluster.etcd import Etcd, EtcdError, WatchEvent, follow_prefix
from .offset_files import Offsets

log = logging.getLogger("tslog.broker.groups")

MAX_TXN_OPS = 128  # etcd's default --max-txn-ops


def group_hash(group_id: str) -> str:
    return hashlib.sha1(group_id.encode()).hexdigest()


class EtcdGroupOffsetStore:
    """GroupOffsetStore's interface (``fetch``, ``all_groups``, ``commit``, ``forget_topic``,
    ``forget_partitions``, ``forget_group``) over etcd."""

    def __init__(self, etcd: Etcd, cluster_name: str) -> None:
        self.etcd = etcd
        self.prefix = f"/{cluster_name}/groups/"
        self._groups: dict[str, Offsets] = {}
        self._revisions: dict[tuple[str, str, int], int] = {}  # newest revision applied per key
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        """Load every group's offsets and keep following changes. Raises EtcdError."""
        revision = await self._resync()
        self._task = asyncio.get_running_loop().create_task(self._watch_loop(revision))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def fetch(self, group_id: str) -> Offsets:
        return self._groups.get(group_id, {})

    def all_groups(self) -> dict[str, Offsets]:
        """A copy of the map; a group's offsets are replaced, never changed in place."""
        return dict(self._groups)

    async def commit(self, group_id: str, offsets: Offsets) -> None:
        """Store ``offsets`` (laid over the group's others) durably in etcd, all or nothing.
        Raises OSError (the caller answers KAFKA_STORAGE_ERROR) if etcd cannot take it."""
        base = self.prefix + group_hash(group_id) + "/"
        puts = [self.etcd.put(f"{base}{topic}/{partition}", json.dumps(
                    {"group_id": group_id, "offset": offset, "metadata": metadata}).encode())
                for (topic, partition), (offset, metadata) in sorted(offsets.items())]
        try:  # etcd caps a transaction's operations: a huge commit goes in atomic chunks
            for start in range(0, len(puts), MAX_TXN_OPS):
                _, revision = await self.etcd.txn([], puts[start:start + MAX_TXN_OPS])
        except EtcdError as exc:
            raise OSError(str(exc)) from None
        self._apply(group_id, offsets, revision)

    async def forget_topic(self, group_id: str, topic: str) -> None:
        """Delete the group's committed offsets of a deleted topic from etcd (one prefix
        delete; the other brokers drop them from their caches by the watch). Raises OSError."""
        await self._delete_prefix(group_id, f"{topic}/",
                                  [tp for tp in self.fetch(group_id) if tp[0] == topic])

    async def forget_partitions(self, group_id: str, partitions: list) -> None:
        """Delete the group's committed offsets of ``partitions`` ((topic, partition) pairs;
        Kafka's OffsetDelete) from etcd: one key each, in transactions of at most
        ``MAX_TXN_OPS``. Raises OSError."""
        base = self.prefix + group_hash(group_id) + "/"
        deletes = [self.etcd.delete(f"{base}{topic}/{partition}")
                   for topic, partition in sorted(partitions)]
        try:
            for start in range(0, len(deletes), MAX_TXN_OPS):
                _, revision = await self.etcd.txn([], deletes[start:start + MAX_TXN_OPS])
        except EtcdError as exc:
            raise OSError(str(exc)) from None
        self._forget(group_id, list(partitions), revision)

    async def forget_group(self, group_id: str) -> None:
        """Delete every committed offset of the group from etcd (DeleteGroups: one prefix
        delete; the other brokers drop them from their caches by the watch). Raises OSError."""
        await self._delete_prefix(group_id, "", list(self.fetch(group_id)))

    async def _delete_prefix(self, group_id: str, under: str, partitions: list) -> None:
        """One prefix delete under the group's key, then ``partitions`` leave the cache."""
        prefix = f"{self.prefix}{group_hash(group_id)}/{under}"
        try:
            _, revision = await self.etcd.txn([], [self.etcd.delete_prefix(prefix)])
        except EtcdError as exc:
            raise OSError(str(exc)) from None
        self._forget(group_id, partitions, revision)

    def _forget(self, group_id: str, partitions: list, revision: int) -> None:
        """Remove keys from the cache unless a newer revision of one is there already; a
        group left with no offsets leaves the cache (it has no committed offsets at all)."""
        gone = set()
        for tp in partitions:
            key = (group_id, *tp)
            if self._revisions.get(key, 0) <= revision:
                self._revisions[key] = revision
                gone.add(tp)
        if gone:
            kept = {tp: value for tp, value in self._groups.get(group_id, {}).items()
                    if tp not in gone}
            if kept:
                self._groups[group_id] = kept
            else:
                self._groups.pop(group_id, None)

    def _apply(self, group_id: str, offsets: Offsets, revision: int) -> None:
        """Lay ``offsets`` over the cache unless a newer revision of a key is there already
        (our own commit is applied at once; its watch event may come after a later one)."""
        fresh = {}
        for tp, value in offsets.items():
            key = (group_id, *tp)
            if self._revisions.get(key, 0) <= revision:
                self._revisions[key] = revision
                fresh[tp] = value
        if fresh:
            merged = dict(self._groups.get(group_id, {}))
            merged.update(fresh)
            self._groups[group_id] = merged

    # -- following etcd ----------------------------------------------------------------------

    async def _resync(self) -> int:
        revision, kvs = await self.etcd.get_prefix(self.prefix)
        groups: dict[str, Offsets] = {}
        revisions = {}
        for kv in kvs:
            entry = self._decode(kv.key, kv.value)
            if entry is not None:
                group_id, tp, value = entry
                groups.setdefault(group_id, {})[tp] = value
                revisions[(group_id, *tp)] = kv.mod_revision
        self._groups, self._revisions = groups, revisions
        return revision

    async def _watch_loop(self, revision: int) -> None:
        await follow_prefix(self.etcd, self.prefix, revision, self._on_event, self._resync,
                            "group offsets")

    def _on_event(self, event: WatchEvent) -> None:
        if event.deleted:  # a deleted topic's offsets (or an operator's delete)
            self._on_delete(event.kv.key, event.kv.mod_revision)
            return
        entry = self._decode(event.kv.key, event.kv.value)
        if entry is not None:
            group_id, tp, value = entry
            self._apply(group_id, {tp: value}, event.kv.mod_revision)

    def _on_delete(self, key: str, revision: int) -> None:
        """A deleted key names the group by its hash only: find the group in the cache."""
        try:
            hashed, rest = key[len(self.prefix):].split("/", 1)
            topic, partition = rest.rsplit("/", 1)
            tp = (topic, int(partition))
        except ValueError:
            return
        for group_id in list(self._groups):
            if group_hash(group_id) == hashed:
                self._forget(group_id, [tp], revision)

    def _decode(self, key: str, value: bytes):
        try:
            topic, partition = key[len(self.prefix):].split("/", 1)[1].rsplit("/", 1)
            document = json.loads(value)
            return (document["group_id"], (topic, int(partition)),
                    (int(document["offset"]), str(document["metadata"])))
        except (ValueError, KeyError, IndexError, TypeError):
            log.warning("ignoring malformed group offsets key %s", key)
            return None
