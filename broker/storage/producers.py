"""Idempotent-producer state of one partition: per producer id, its epoch and its last batches.

Why: a producer that retries a batch after a timeout or a leader failover cannot know whether
the first attempt was written. It stamps each batch with (producer id, epoch, base sequence)
and the leader keeps, per producer id, the sequence ranges and offsets of its last
``BATCHES_KEPT`` batches. A retried batch that matches one of them is answered with the
original base offset and LogAppendTime and not written again; a batch that skips sequences
is refused (OUT_OF_ORDER_SEQUENCE_NUMBER) rather than leaving a hole the producer believes
filled.

The state is a function of the log's batch headers (followers copy them byte for byte), so
any replica rebuilds it by reading headers: one dict update per batch, never a record. A
snapshot file ``producer-state`` (msgpack: the offset it covers and the entries), written at
each checkpoint, bounds that scan on open to the batches after the snapshot.

Expiry: every idempotent producer a client starts gets a new id, so without it the table
(and the snapshot rewritten at every checkpoint) would grow for as long as the partition
lives. At each checkpoint, producers whose newest batch is more than
``producer.id.expiration.ms`` of LogAppendTime older than the partition's newest batch are
forgotten (Kafka: ``producer.id.expiration.ms``, one day). Measured on the log's own time,
not a clock, so every replica forgets the same producers; a retry that comes after that
is taken as a new batch, as for any unknown producer.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Iterable

import msgpack

from tslog.protocol.batch_header import BatchHeader

from . import files

SNAPSHOT_FILE = "producer-state"
BATCHES_KEPT = 5  # what a producer may have in flight and retry (Kafka keeps 5 too)
NO_PRODUCER_ID = -1
_SEQUENCE_MOD = 2**31


class OutOfOrderSequenceError(Exception):
    """The batch's base sequence does not follow the producer's last one."""


class InvalidProducerEpochError(Exception):
    """The batch's producer epoch is older than the one the partition has seen."""


class ProducerEntry:
    """One producer's epoch and its last batches: (first seq, last seq, base offset, LAT)."""

    __slots__ = ("epoch", "batches")

    def __init__(self, epoch: int, batches: Iterable[tuple[int, int, int, int]] = ()) -> None:
        self.epoch = epoch
        self.batches: deque[tuple[int, int, int, int]] = deque(batches, maxlen=BATCHES_KEPT)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


def last_sequence_of(header: BatchHeader) -> int:
    return (header.base_sequence + header.record_count - 1) % _SEQUENCE_MOD


class ProducerStateTable:
    """The producers of one partition. Not thread-safe: owned by the partition's owner."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.covered_offset = 0  # every batch below this offset is reflected here

    def check(self, header: BatchHeader) -> tuple[int, int] | None:
        """Before a leader append: None to append, or (base offset, LAT) of the batch this one
        duplicates.

        Raises:
            InvalidProducerEpochError, OutOfOrderSequenceError: refuse the batch.
        """
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return None
        entry = self.producers.get(producer_id)
        if entry is None:
            return None  # unknown (new, or its state aged out with the log): accept
        if header.producer_epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id} epoch {header.producer_epoch} < {entry.epoch}")
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceError(
                    f"producer {producer_id} new epoch must start at sequence 0")
            return None
        first, last = header.base_sequence, last_sequence_of(header)
        for seen_first, seen_last, base_offset, log_append_time in entry.batches:
            if seen_first == first and seen_last == last:
                return base_offset, log_append_time
        expected = (entry.last_sequence + 1) % _SEQUENCE_MOD
        if first != expected:
            raise OutOfOrderSequenceError(
                f"producer {producer_id} sent sequence {first}, expected {expected}")
        return None

    def update(self, header: BatchHeader) -> None:
        """After an append (leader or follower) or while rebuilding: ``header`` as stored."""
        self.covered_offset = header.next_offset
        producer_id = header.producer_id
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(producer_id)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(header.producer_epoch)
        entry.batches.append((header.base_sequence, last_sequence_of(header),
                              header.base_offset, header.log_append_time))

    def expire(self, older_than_lat: int) -> int:
        """Forget producers whose newest batch has a LAT before ``older_than_lat`` (and any
        left without batches); returns how many went. O(producers): at checkpoints only."""
        expired = [producer_id for producer_id, entry in self.producers.items()
                   if not entry.batches or entry.batches[-1][3] < older_than_lat]
        for producer_id in expired:
            del self.producers[producer_id]
        return len(expired)

    def truncate_to(self, offset: int) -> bool:
        """Forget batches at or after ``offset``. Returns False when a producer's every kept
        batch went, in which case the caller rebuilds from the log."""
        complete = True
        for producer_id, entry in list(self.producers.items()):
            kept = [b for b in entry.batches if b[2] < offset]
            if len(kept) != len(entry.batches):
                if not kept:
                    complete = False
                entry.batches = deque(kept, maxlen=BATCHES_KEPT)
        self.covered_offset = min(self.covered_offset, offset)
        return complete

    # -- snapshot --------------------------------------------------------------------------

    def snapshot_bytes(self) -> bytes:
        """The snapshot file's content for the current state (cheap: O(producers))."""
        return msgpack.packb({"offset": self.covered_offset,
                              "producers": [[pid, e.epoch, [list(b) for b in e.batches]]
                                            for pid, e in self.producers.items()]})

    def write_snapshot(self, directory: Path) -> None:
        files.write_atomically(Path(directory) / SNAPSHOT_FILE, self.snapshot_bytes())

    @classmethod
    def read_snapshot(cls, directory: Path) -> "ProducerStateTable":
        """The snapshot's state, or an empty table (offset 0) when none is usable."""
        table = cls()
        try:
            data = msgpack.unpackb(files.read_small(os.path.join(directory, SNAPSHOT_FILE)))
            offset = int(data["offset"])
            producers = {int(pid): ProducerEntry(int(epoch), [tuple(int(x) for x in b)
                                                              for b in batches])
                         for pid, epoch, batches in data["producers"]}
        except (OSError, ValueError, KeyError, TypeError, msgpack.UnpackException):
            return table
        table.producers, table.covered_offset = producers, offset
        return table


def largest_in_snapshot(directory: Path) -> int:
    """The largest producer id in ``directory``'s snapshot, 0 if none (or no usable file):
    what a broker's start needs of a log it leaves unopened (``ReplicaManager``)."""
    return max(ProducerStateTable.read_snapshot(directory).producers, default=0)
