"""Choosing a partition for a record (sans-IO).

Keyed records: ``crc32c(key) % partitions``. The hash must be stable across processes,
machines and Python versions (Python's ``hash()`` of bytes is salted per process), because a
user relies on "same key, same partition" to keep one key's records in order. CRC32C is a C
extension here, so it costs well under a microsecond per key.

Records without a key use the sticky partitioner (Kafka's KIP-480): they all go to one
partition until its batch is closed, then to another chosen at random. Large batches mean
fewer requests than round-robin would give, and over many batches the load evens out.
"""

from __future__ import annotations

import random

from crc32c import crc32c


def key_partition(key, partitions: int) -> int:
    """The partition for ``key`` among ``partitions``; the same on every machine, forever."""
    return crc32c(key) % partitions


class StickyPartitioner:
    """Remembers the current partition for null-key records, per topic."""

    __slots__ = ("_current", "_random")

    def __init__(self, seed: int | None = None) -> None:
        self._current: dict[str, int] = {}
        self._random = random.Random(seed)

    def partition(self, topic: str, partitions: int) -> int:
        current = self._current.get(topic)
        if current is None or current >= partitions:
            current = self._current[topic] = self._random.randrange(partitions)
        return current

    def batch_closed(self, topic: str, partition: int, partitions: int) -> None:
        """The batch of ``partition`` was closed: stick to another partition from now on."""
        if self._current.get(topic) != partition:
            return
        if partitions <= 1:
            return
        choice = self._random.randrange(partitions - 1)
        self._current[topic] = choice if choice < partition else choice + 1
