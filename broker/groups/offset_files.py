"""Committed consumer-group offsets, durable before OffsetCommit is answered.

Layout: one JSON file per group, ``DATA_DIR/__meta/groups/<sha1 of group id>.json`` holding
``{"group_id": str, "offsets": [[topic, partition, offset, metadata], ...]}``, replaced
atomically (temp file, fsync, rename, directory fsync). Hashing the id keeps any group name
(slashes, 1000 characters, unicode) a legal file name; the id itself is stored inside.

Why whole-file rewrites: a group holds as many entries as partitions it consumes, so a file
stays small, and a rewrite needs no compaction or replay logic. Commits of one group must be
serialized so an older snapshot can never overwrite a newer one; commits of
different groups write in parallel. That ordering belongs to the server (a lock per group
around ``commit``); ``commit`` runs the fsyncs in a worker thread.

In a cluster, offsets live in etcd instead (``offset_etcd.EtcdGroupOffsetStore``, the
same methods), so a controller failover keeps them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path

from ..metadata import META_DIR
from ..storage.files import fsync_directory, write_atomically

log = logging.getLogger("tslog.broker.groups")

GROUPS_DIR = "groups"
MAX_GROUP_ID_CHARS = 255
MAX_METADATA_BYTES = 4096

Offsets = dict[tuple[str, int], tuple[int, str]]  # (topic, partition) -> (offset, metadata)


def group_id_problem(group_id: str) -> str | None:
    if not 1 <= len(group_id) <= MAX_GROUP_ID_CHARS:
        return f"group ids are 1-{MAX_GROUP_ID_CHARS} characters"
    return None


class GroupOffsetStore:
    """Owner: the event loop; ``write`` runs in a thread, serialized per group by the caller."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = Path(data_dir) / META_DIR / GROUPS_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self._groups: dict[str, Offsets] = {}
        self._load()

    def _path(self, group_id: str) -> Path:
        return self.directory / (hashlib.sha1(group_id.encode()).hexdigest() + ".json")

    def _load(self) -> None:
        for path in self.directory.glob("*.json"):
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
                self._groups[document["group_id"]] = {
                    (topic, partition): (offset, metadata)
                    for topic, partition, offset, metadata in document["offsets"]
                }
            except (OSError, ValueError, KeyError, TypeError):
                log.exception("unreadable group offsets file %s; ignoring it", path)

    def fetch(self, group_id: str) -> Offsets:
        """The group's committed offsets (empty for an unknown group)."""
        return self._groups.get(group_id, {})

    def all_groups(self) -> dict[str, Offsets]:
        """Every group's committed offsets: a copy of the map, taken in one step, so a
        ``write`` finishing in its thread meanwhile cannot disturb the caller's iteration
        (``write`` replaces a group's map, it never changes one in place)."""
        return dict(self._groups)

    def merged(self, group_id: str, offsets: Offsets) -> Offsets:
        """The group's committed offsets with ``offsets`` laid over them (nothing stored)."""
        current = dict(self._groups.get(group_id, {}))
        current.update(offsets)
        return current

    async def commit(self, group_id: str, offsets: Offsets) -> None:
        """Store ``offsets`` laid over the group's others durably (fsync in a worker thread).
        The caller serialises commits of one group. Raises OSError."""
        await asyncio.to_thread(self.write, group_id, self.merged(group_id, offsets))

    async def forget_topic(self, group_id: str, topic: str) -> None:
        """Drop the group's committed offsets of a deleted topic, durably (as Kafka does): a
        topic re-created under the name must not hand the group its predecessor's offsets.
        The caller serialises it with the group's commits. A group left with no offsets
        loses its file, as in etcd a group without keys is gone. Raises OSError."""
        kept = {tp: value for tp, value in self.fetch(group_id).items() if tp[0] != topic}
        if kept:
            await asyncio.to_thread(self.write, group_id, kept)
        else:
            await asyncio.to_thread(self.delete, group_id)

    async def forget_partitions(self, group_id: str, partitions: list) -> None:
        """Drop the group's committed offsets of ``partitions`` ((topic, partition) pairs;
        Kafka's OffsetDelete), durably; a group left with none loses its file. The caller
        serialises it with the group's commits. Raises OSError."""
        gone = set(partitions)
        kept = {tp: value for tp, value in self.fetch(group_id).items() if tp not in gone}
        if kept:
            await asyncio.to_thread(self.write, group_id, kept)
        else:
            await asyncio.to_thread(self.delete, group_id)

    async def forget_group(self, group_id: str) -> None:
        """Delete all of the group's committed offsets durably (DeleteGroups): its file goes,
        so a restart does not bring them back. The caller serialises it with the group's
        commits. Raises OSError."""
        await asyncio.to_thread(self.delete, group_id)

    def delete(self, group_id: str) -> None:
        """Remove the group's file (and the directory entry, fsynced), then forget the group.
        Slow (fsync): run in a thread, one call per group at a time. Raises OSError."""
        self._path(group_id).unlink(missing_ok=True)
        fsync_directory(self.directory)
        self._groups.pop(group_id, None)

    def write(self, group_id: str, offsets: Offsets) -> None:
        """Store the group's complete offsets durably, then make them visible. Slow (fsync):
        the server calls it in a thread, one call per group at a time. Raises OSError."""
        write_atomically(self._path(group_id), _encode(group_id, offsets))
        self._groups[group_id] = offsets


def _encode(group_id: str, offsets: Offsets) -> bytes:
    entries = [[topic, partition, offset, metadata]
               for (topic, partition), (offset, metadata) in sorted(offsets.items())]
    return json.dumps({"group_id": group_id, "offsets": entries}).encode()
