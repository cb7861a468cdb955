"""Cluster metadata: which topics exist, their partition counts and config overrides.

``MetadataStore`` is the seam: a single node's ``LocalMetadataStore`` keeps everything in one
JSON file, ``DATA_DIR/__meta/topics.json``, rewritten atomically (temp file, fsync, rename,
directory fsync) on every change, so a crash leaves the old or the new list, never half of one.
A cluster keeps its topics in etcd instead (``etcd_store.py`` beside this module).

Topic names follow docs/protocol.md: 1-249 characters of ``[A-Za-z0-9._-]``, not ``.``/``..``.
The metadata directory's name (``__meta``) cannot clash with a partition directory, which
always ends in ``-<partition>``.

Deleting a topic must work on a full disk: it is how an operator gets space back. Replacing
``topics.json`` needs a new file, so a deletion is first recorded in ``__meta/deleting``
(``DeletionJournal``), which needs no free space, and ``topics.json`` is rewritten when it can
be (at once, or after the topic's files are gone). A name stays in the journal until its
directories are gone, so a start after a crash finishes every deletion it finds there.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import struct
import zlib
from pathlib import Path
from typing import Iterable, NamedTuple, Protocol

from ..storage.files import write_atomically

log = logging.getLogger("tslog.broker.metadata")

META_DIR = "__meta"
TOPICS_FILE = "topics.json"
DELETING_FILE = "deleting"
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` is not a legal topic name, or None if it is."""
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if not _TOPIC_NAME.fullmatch(name):
        return "topic names are 1-249 characters of [A-Za-z0-9._-]"
    return None


class TopicMetadata(NamedTuple):
    name: str
    partitions: int
    configs: dict[str, str]  # the topic's own overrides (dotted names), not the defaults
    replication_factor: int = 1  # copies of each partition (always 1 on a single node)


class MetadataStore(Protocol):
    def topics(self) -> dict[str, TopicMetadata]:
        """Every topic, by name."""

    def put_topic(self, topic: TopicMetadata) -> None:
        """Create or replace a topic durably before returning."""

    def delete_topic(self, name: str) -> None:
        """Forget a topic durably before returning (its data is removed by the caller, who
        then calls ``deletion_done``)."""

    def pending_deletions(self) -> frozenset[str]:
        """Topics forgotten whose directories may still be on disk."""

    def deletion_done(self, name: str) -> None:
        """The directories of deleted topic ``name`` are gone. Raises OSError."""


class DeletionJournal:
    """Names of topics whose deletion has begun, in a file that is never allocated again.

    Layout: two slots of ``SLOT_BYTES``, each ``magic (4) | sequence u64 | payload length u32
    | crc32 u32 of the header's sequence and length and of the payload`` then the payload (a
    JSON list of names), little-endian. The file is written full of zeros when the store
    opens (while there is space); a change overwrites the older slot in place and
    fdatasyncs, which allocates no block on ext4, xfs or tmpfs, so it works on a disk with
    not one byte free (not on copy-on-write file systems such as btrfs or ZFS). The valid
    slot with the higher sequence is the content: a slot torn by a power cut fails its CRC,
    and the other one, the journal before the change, stands.

    Owner: ``LocalMetadataStore``, one thread at a time (topic changes are serialized).
    """

    SLOT_BYTES = 16 << 10  # 60 names of the longest kind; far more than a full disk needs
    _HEADER = struct.Struct("<4sQII")
    _MAGIC = b"TSDJ"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.names: frozenset[str] = frozenset()
        self._sequence = 0
        self._ready = False  # the file exists at its full size
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return
        self._ready = len(data) == 2 * self.SLOT_BYTES
        slots = [self._parse(data[i * self.SLOT_BYTES:(i + 1) * self.SLOT_BYTES]) for i in (0, 1)]
        valid = [slot for slot in slots if slot is not None]
        if valid:
            self._sequence, self.names = max(valid, key=lambda slot: slot[0])

    def _parse(self, slot: bytes) -> tuple[int, frozenset[str]] | None:
        if len(slot) < self._HEADER.size:
            return None
        magic, sequence, length, crc = self._HEADER.unpack_from(slot)
        payload = slot[self._HEADER.size:self._HEADER.size + length]
        if magic != self._MAGIC or len(payload) != length or crc != self._crc(sequence, payload):
            return None
        return sequence, frozenset(json.loads(payload))

    @staticmethod
    def _crc(sequence: int, payload: bytes) -> int:
        return zlib.crc32(struct.pack("<QI", sequence, len(payload)) + payload)

    def prepare(self) -> None:
        """Make the file at its full size if it is not (needs space: at start-up)."""
        if self._ready:
            return
        write_atomically(self.path, bytes(2 * self.SLOT_BYTES))
        self._sequence, self._ready = 0, True
        if self.names:  # read from a file of the wrong size: keep them
            self.write(self.names)

    def write(self, names: Iterable[str]) -> None:
        """Replace the content durably. Raises OSError (ENOSPC if there is no file yet, or
        the names do not fit a slot)."""
        names = frozenset(names)
        payload = json.dumps(sorted(names)).encode()
        if not self._ready or self._HEADER.size + len(payload) > self.SLOT_BYTES:
            raise OSError(errno.ENOSPC, "the deletion journal cannot take this", str(self.path))
        sequence = self._sequence + 1
        slot = self._HEADER.pack(self._MAGIC, sequence, len(payload),
                                 self._crc(sequence, payload)) + payload
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.pwrite(fd, slot, (sequence % 2) * self.SLOT_BYTES)
            os.fdatasync(fd)
        finally:
            os.close(fd)
        self._sequence, self.names = sequence, names


class LocalMetadataStore:
    """Topics of a single-node broker, in one atomically replaced JSON file, less the
    topics named in the deletion journal."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = Path(data_dir) / META_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / TOPICS_FILE
        self.journal = DeletionJournal(self.directory / DELETING_FILE)
        self._unsaved = False  # topics.json still lists a topic the journal deleted
        self._topics = self._load()
        self._prepare_journal()

    def _load(self) -> dict[str, TopicMetadata]:
        if not self.path.exists():
            return {}
        document = json.loads(self.path.read_text(encoding="utf-8"))
        topics = {
            entry["name"]: TopicMetadata(entry["name"], int(entry["partitions"]),
                                         dict(entry.get("configs", {})))
            for entry in document["topics"]
        }
        self._unsaved = any(name in topics for name in self.journal.names)
        return {name: topic for name, topic in topics.items() if name not in self.journal.names}

    def _prepare_journal(self) -> None:
        try:
            self.journal.prepare()
        except OSError as exc:  # a full disk at start: tried again after the next save
            log.warning("cannot make the deletion journal %s: %r", self.journal.path, exc)

    def topics(self) -> dict[str, TopicMetadata]:
        return dict(self._topics)

    def put_topic(self, topic: TopicMetadata) -> None:
        topics = dict(self._topics)
        topics[topic.name] = topic
        self._save(topics)
        if topic.name in self.journal.names:  # created again: a restart must keep it
            self.journal.write(self.journal.names - {topic.name})

    def delete_topic(self, name: str) -> None:
        """Durable once the journal names the topic (no free space needed); topics.json is
        rewritten now if the disk allows, else by ``deletion_done`` or the next change."""
        topics = dict(self._topics)
        topics.pop(name, None)
        try:
            self.journal.write(self.journal.names | {name})
        except OSError as exc:  # no journal: the record has to go the plain way
            log.warning("deletion journal unusable (%r): rewriting %s", exc, self.path)
            self._save(topics)
            return
        self._topics = topics
        try:
            self._save(topics)
        except OSError as exc:
            self._unsaved = True
            log.warning("topic %s deleted in %s; %s is rewritten later: %r", name,
                        self.journal.path, self.path, exc)

    def pending_deletions(self) -> frozenset[str]:
        return self.journal.names

    def deletion_done(self, name: str) -> None:
        if self._unsaved:
            self._save(self._topics)
        if name in self.journal.names:
            self.journal.write(self.journal.names - {name})

    def _save(self, topics: dict[str, TopicMetadata]) -> None:
        document = {"version": 1, "topics": [
            {"name": t.name, "partitions": t.partitions, "configs": t.configs}
            for t in sorted(topics.values())
        ]}
        write_atomically(self.path, json.dumps(document, indent=1).encode())
        self._topics = topics  # only after the write succeeded
        self._unsaved = False
        self._prepare_journal()
