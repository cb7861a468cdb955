"""The leader-epoch checkpoint: which leader epoch started at which offset of a partition.

Why it exists (Kafka's KIP-101): a follower that truncated to its high watermark after a
leader change could lose acknowledged records or fork offsets from the new leader. Instead,
a follower of a new leader asks "where does my latest epoch end in *your* log?" and truncates
to that answer, so the replicas' logs agree batch for batch below it and divergent,
never-committed tails go away.

The file ``leader-epoch-checkpoint`` in the partition directory is text, replaced atomically::

    0                 format version
    2                 number of entries
    3 0               epoch 3 starts at offset 0
    5 1200            epoch 5 starts at offset 1200

Entries are strictly increasing in both epoch and start offset. A leader adds one when it
takes over (its epoch, at its log end offset); a follower adds one when a copied batch carries
an epoch newer than its latest (O(1) per batch: one comparison). Truncating the log removes
the entries that start at or after the cut; deleting old segments moves the first entry's
start up. Opening drops entries past the log end (the file may be newer than a torn tail).

When the file is written: by the log's I/O worker (``ReplicaLog`` hands it every new
content, in order with the log's own disk commands), so neither a failover touching hundreds
of partitions nor a follower's truncation waits on the loop for the file's two fsyncs. What
a crash before the write leaves is repaired when the log is opened: a new epoch or a moved
start that is missing is rebuilt from the batch headers after the producer snapshot (which
``ReplicaLog`` writes only after the epochs it covers); a cut that is missing shows as a
latest epoch whose first batch carries another epoch, and the epochs are then rebuilt from
every header. ``persist``'s ``deferrable`` is False for a cut (the change that misplaces an
epoch's end if it is lost), for a caller that must tell the two apart; the default persist,
for tools without a log, writes both at once.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Callable

from . import files

CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED = -1
_VERSION = 0


class LeaderEpochCache:
    """The (epoch, start offset) entries of one partition, mirrored to its checkpoint file."""

    def __init__(self, directory: Path | str,
                 persist: Callable[[bytes, bool], None] | None = None) -> None:
        """``persist(content, deferrable)`` stores the file's new content (default: at once).
        The file is read through a string path (a broker's start reads one per partition);
        the ``Path`` is made for a write or a message (``path``)."""
        self._directory = directory
        self._persist = persist or (lambda content, _: files.write_atomically(self.path, content))
        self.entries: list[tuple[int, int]] = self._read()

    @property
    def path(self) -> Path:
        return Path(self._directory) / CHECKPOINT_FILE

    def _read(self) -> list[tuple[int, int]]:
        try:
            lines = files.read_small(os.path.join(self._directory, CHECKPOINT_FILE))
            lines = lines.decode().split("\n")
        except FileNotFoundError:
            return []
        try:
            if int(lines[0]) != _VERSION:
                raise ValueError(f"unknown version {lines[0]!r}")
            count = int(lines[1])
            entries = [tuple(int(x) for x in line.split()) for line in lines[2 : 2 + count]]
        except (ValueError, IndexError) as exc:
            raise ValueError(f"{self.path}: unreadable leader-epoch checkpoint: {exc}") from None
        if len(entries) != count or any(len(e) != 2 for e in entries):
            raise ValueError(f"{self.path}: leader-epoch checkpoint has a torn entry list")
        return [(e[0], e[1]) for e in entries]

    def _write(self, deferrable: bool) -> None:
        lines = [str(_VERSION), str(len(self.entries))]
        lines += [f"{epoch} {start}" for epoch, start in self.entries]
        self._persist(("\n".join(lines) + "\n").encode(), deferrable)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def start_offset_of_latest(self) -> int:
        return self.entries[-1][1] if self.entries else UNDEFINED

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` unless an epoch >= it is known.

        Returns True when an entry was added (the file is rewritten, maybe later).
        """
        if self.entries and epoch <= self.entries[-1][0]:
            return False
        if self.entries and start_offset < self.entries[-1][1]:
            # A newer epoch cannot start before an older one: the older one never got data
            # past this point, so it ends here.
            self.entries = [e for e in self.entries if e[1] < start_offset]
        self.entries.append((epoch, start_offset))
        self._write(deferrable=True)
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetForLeaderEpoch answer: (largest known epoch <= ``epoch``, the offset
        where that epoch ends in this log), or (UNDEFINED, UNDEFINED) if ``epoch`` predates
        every entry.

        The latest epoch ends at the log end; any other ends where the next known epoch
        starts.
        """
        if not self.entries or epoch < self.entries[0][0]:
            return UNDEFINED, UNDEFINED
        if epoch >= self.entries[-1][0]:
            return self.entries[-1][0], log_end_offset
        i = bisect.bisect_right(self.entries, epoch, key=lambda e: e[0])
        return self.entries[i - 1][0], self.entries[i][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut at ``end_offset``: forget epochs that start at or after it."""
        kept = [e for e in self.entries if e[1] < end_offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._write(deferrable=False)

    def truncate_from_start(self, start_offset: int) -> None:
        """Old segments were deleted up to ``start_offset``: entries that ended before it go,
        and the epoch holding it now starts there."""
        i = bisect.bisect_right(self.entries, start_offset, key=lambda e: e[1])
        if i == 0:
            return
        kept = [(self.entries[i - 1][0], max(self.entries[i - 1][1], start_offset))]
        kept += self.entries[i:]
        if kept != self.entries:
            self.entries = kept
            self._write(deferrable=True)
