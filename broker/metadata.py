"""Cluster metadata: which topics exist, their partition counts and config overrides.

``MetadataStore`` is the seam for replication: today ``LocalMetadataStore`` keeps everything in
one JSON file, ``DATA_DIR/__meta/topics.json``, rewritten atomically (temp file, fsync, rename,
directory fsync) on every change, so a crash leaves the old or the new list, never half of one.
A later controller-backed store will implement the same four methods.

Topic names follow docs/protocol.md: 1-249 characters of ``[A-Za-z0-9._-]``, not ``.``/``..``.
The metadata directory's name (``__meta``) cannot clash with a partition directory, which
always ends in ``-<partition>``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple, Protocol

from .storage.files import write_atomically

META_DIR = "__meta"
TOPICS_FILE = "topics.json"
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
        """Forget a topic durably before returning (its data is removed by the caller)."""


class LocalMetadataStore:
    """Topics of a single-node broker, in one atomically replaced JSON file."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = Path(data_dir) / META_DIR
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / TOPICS_FILE
        self._topics = self._load()

    def _load(self) -> dict[str, TopicMetadata]:
        if not self.path.exists():
            return {}
        document = json.loads(self.path.read_text(encoding="utf-8"))
        return {
            entry["name"]: TopicMetadata(entry["name"], int(entry["partitions"]),
                                         dict(entry.get("configs", {})))
            for entry in document["topics"]
        }

    def topics(self) -> dict[str, TopicMetadata]:
        return dict(self._topics)

    def put_topic(self, topic: TopicMetadata) -> None:
        topics = dict(self._topics)
        topics[topic.name] = topic
        self._save(topics)

    def delete_topic(self, name: str) -> None:
        topics = dict(self._topics)
        topics.pop(name, None)
        self._save(topics)

    def _save(self, topics: dict[str, TopicMetadata]) -> None:
        document = {"version": 1, "topics": [
            {"name": t.name, "partitions": t.partitions, "configs": t.configs}
            for t in sorted(topics.values())
        ]}
        write_atomically(self.path, json.dumps(document, indent=1).encode())
        self._topics = topics  # only after the write succeeded
