"""``ReplicaLog``: a partition log plus what replication keeps beside it on disk.

Why a separate object: the leader-epoch checkpoint, the producer state and the high
watermark are all functions of the log's batch headers and must move with the log: appended
to on every append, cut on every truncation, rebuilt from headers when their files are stale.
Keeping them in one place means a truncation can never cut the log and forget an epoch.

Files beside the segments (see ``docs/storage-format.md``):

``leader-epoch-checkpoint``  ``epochs.LeaderEpochCache``
``producer-state``           ``producers.ProducerStateTable`` snapshot (msgpack)
``high-watermark``           text ``"<offset>\\n"``: the last high watermark known to be
                             committed, so a restarted replica never exposes a tail that
                             was not (it is capped by the log end on open)

Work per batch is constant: one header parse, one comparison for the epoch, one dict update
for the producer. A leader's appends come through ``append_as_leader``, which holds the
append rules (check, de-duplicate, assign offsets) in one place, as Kafka's ``UnifiedLog``. Opening reads headers only from the producer snapshot's offset on (every
header when there is no snapshot); recovery already validated them.
"""

from __future__ import annotations

import os
import threading

from . import append_checks, files
from .epochs import LeaderEpochCache
from .errors import IdempotentBatchesError
from .headers import headers_from
from .log import PartitionLog
from .producers import SNAPSHOT_FILE, ProducerStateTable
from .types import AppendInfo, ConvertedBatches, LeaderAppend

HIGH_WATERMARK_FILE = "high-watermark"
_new_tuple = tuple.__new__  # a NamedTuple from a tuple, without ``_make``'s Python frame


class ReplicaLog:
    """A ``PartitionLog`` with its leader epochs, producer state and high watermark."""

    def __init__(self, plog: PartitionLog) -> None:
        """Reads the files beside the log and the headers after the producer snapshot:
        slow for a log with many batches, so a broker builds it in the thread that opens the
        logs (``ReplicaManager.open_all``). Epoch-file writes go to the log's I/O worker."""
        self.log = plog
        self.directory = plog.directory
        end = plog.log_end_offset
        self._epochs_lock = threading.Lock()  # guards _epochs_pending; never held for I/O
        self._epochs_pending: bytes | None = None  # the epoch file's content not yet written
        self.epochs = LeaderEpochCache(plog.directory, persist=self._persist_epochs)
        self.epochs.truncate_from_end(end)
        self.epochs.truncate_from_start(plog.log_start_offset)
        producers = ProducerStateTable.read_snapshot(plog.directory)
        if not plog.log_start_offset <= producers.covered_offset <= end:
            producers = ProducerStateTable()
        on_disk = (producers.covered_offset, len(producers.producers))
        if not self._latest_epoch_matches_its_batch():
            self.epochs.truncate_from_end(plog.log_start_offset)  # rebuilt from every header
        rebuild_epochs = not self.epochs.entries and end > plog.log_start_offset
        scan_from = plog.log_start_offset if rebuild_epochs else max(
            producers.covered_offset, plog.log_start_offset)
        headers = headers_from(plog, scan_from) if scan_from < end else ()  # a new log: none
        for header in headers:
            if header.leader_epoch > self.epochs.latest_epoch:
                self.epochs.assign(header.leader_epoch, header.base_offset)
            if header.base_offset >= producers.covered_offset:
                producers.update(header)
        self.producers = producers
        high_watermark_on_disk = self._read_high_watermark()
        self.high_watermark = min(high_watermark_on_disk, end)
        # (HW, producer offset, producers) last written. What the files already hold counts
        # as written: a broker restarted over ten thousand unchanged partitions then makes
        # no fsync for them at its first checkpoint or its shutdown.
        self._checkpointed: tuple | None = (
            (high_watermark_on_disk, *on_disk)
            if scan_from >= end and on_disk == (producers.covered_offset, len(producers.producers))
            else None)

    def _latest_epoch_matches_its_batch(self) -> bool:
        """Whether the batch where the latest known epoch starts carries that epoch. Not
        after a crash between a truncation and the worker's write of the epoch cut, if the
        log then grew past the cut with the new leader's batches: the file still names the
        cut epochs. Every epoch in the file is older than the new leader's, so checking the
        last entry finds it (one header read); the epochs are then rebuilt from the log."""
        entries = self.epochs.entries
        if not entries or entries[-1][1] >= self.log.log_end_offset:
            return True
        epoch, start = entries[-1]
        return next(headers_from(self.log, start)).leader_epoch == epoch

    def _read_high_watermark(self) -> int:
        try:
            return int(files.read_small(os.path.join(self.directory, HIGH_WATERMARK_FILE)))
        except (OSError, ValueError):
            return 0

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # -- appends ---------------------------------------------------------------------------

    def append_as_leader(self, batches, leader_epoch: int) -> LeaderAppend:
        """Kafka's ``UnifiedLog.appendAsLeader``: one request's batches for this partition,
        all or nothing. Every batch is checked before any is written (``append_checks``); a
        retried idempotent batch already in the log answers its original offsets and is
        not written again; the others get offsets and one LAT (``PartitionLog.append_checked``,
        under the log's lock) and their producer is tracked from the stamped header.

        ``batches``: batches back to back (bytes-like, checked in full here), or
        ``ConvertedBatches`` (the Kafka listener's: their headers are the ones it packed).
        Appends run on the owner's thread only, so nothing appends between the producer
        check and the write; the log's lock keeps retention and flushes (other threads)
        out of the write itself.

        Raises:
            StorageError subclasses (IdempotentBatchesError: an idempotent batch with
            others), OutOfOrderSequenceError, InvalidProducerEpochError: nothing written.
            OSError: what was written is cut again if the disk lets us (``append_checked``).
        """
        log = self.log
        now_ms = log.clock.now_ms()
        if type(batches) is ConvertedBatches:
            checked = [append_checks.converted_for_leader(log.config, one, now_ms,
                                                          batches.sent_bytes)
                       for one in batches.batches]
        else:
            checked = append_checks.split_for_leader(log.config, batches, now_ms)
        header = checked[0][1]
        if len(checked) > 1:
            if any(one[1].producer_id >= 0 for one in checked):
                raise IdempotentBatchesError("an idempotent batch must be alone in its partition")
        elif header.producer_id >= 0:
            duplicate = self.producers.check(header)
            if duplicate is not None:
                return _new_tuple(LeaderAppend, (
                    duplicate[0], duplicate[0] + header.last_offset_delta, duplicate[1],
                    header.batch_length, header.max_create_time, True))
        first, last = log.append_checked(checked, leader_epoch, now_ms)
        if header.producer_id >= 0:
            self.producers.update(first)
        else:
            self.producers.covered_offset = last.base_offset + last.record_count
        if len(checked) == 1:
            size, newest = header.batch_length, header.max_create_time
        else:
            size = sum(one[1].batch_length for one in checked)
            newest = max(one[1].max_create_time for one in checked)
        return _new_tuple(LeaderAppend, (first.base_offset,
                                         last.base_offset + last.last_offset_delta,
                                         last.log_append_time, size, newest, False))

    def append_as_follower(self, batch) -> AppendInfo:
        """Append the leader's bytes as they are; learn its epochs and producers from them."""
        header = self.log.append_as_follower(batch)  # the one parse of its header
        if header.leader_epoch > self.epochs.latest_epoch:
            self.epochs.assign(header.leader_epoch, header.base_offset)
        self.producers.update(header)
        return AppendInfo(header.base_offset, header.last_offset, header.log_append_time,
                          header.batch_length)

    def become_leader(self, leader_epoch: int) -> None:
        """This replica leads from its log end in ``leader_epoch`` (KIP-101's epoch entry)."""
        self.epochs.assign(leader_epoch, self.log.log_end_offset)

    # -- truncation, checkpoints -----------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Cut the log at ``offset`` with everything derived from it. An offset inside a
        batch cuts at that batch's start (a batch is never split)."""
        if offset >= self.log.log_end_offset:
            return 0
        offset = next(headers_from(self.log, offset)).base_offset
        removed = self.log.truncate_to(offset)
        self.epochs.truncate_from_end(offset)
        if not self.producers.truncate_to(offset):
            self.producers = ProducerStateTable()
            for header in headers_from(self.log, self.log.log_start_offset):
                self.producers.update(header)
        self.high_watermark = min(self.high_watermark, offset)
        return removed

    def reset_to(self, offset: int) -> None:
        """Drop the whole log and go on, empty, at ``offset`` (``PartitionLog.reset_to``):
        a follower whose log ends below its leader's log start (retention ran there while
        it was away) can only copy from there. No epoch, producer or batch is left."""
        self.log.reset_to(offset)
        self.epochs.truncate_from_end(0)  # none of our epochs holds a batch any more
        self.producers = ProducerStateTable()
        self.producers.covered_offset = offset
        self.high_watermark = offset

    def checkpoint_snapshot(self) -> tuple[bytes, bytes] | None:
        """On the owner's thread: the (high-watermark, producer-state) file contents to write,
        or None when neither changed since the last snapshot (an idle partition costs no
        fsync). Also follows retention's cuts in the epoch checkpoint and forgets producers
        idle for ``producer.id.expiration.ms`` of the log's time (``producers.py``)."""
        self.epochs.truncate_from_start(self.log.log_start_offset)
        producers = self.producers
        producers.expire(self.log.last_log_append_time - self.log.config.producer_id_expiration_ms)
        state = (self.high_watermark, producers.covered_offset, len(producers.producers))
        if state == self._checkpointed:
            return None
        self._checkpointed = state
        return f"{self.high_watermark}\n".encode(), self.producers.snapshot_bytes()

    def _persist_epochs(self, content: bytes, deferrable: bool) -> None:
        """Every epoch-file write goes to the log's I/O worker, cuts included: in order with
        the log's own commands (a truncation's unlinks and checkpoint come first), and no
        fsync on the loop. A cut not yet written when the broker crashes is found on open
        (``_latest_epoch_matches_its_batch``), a new epoch not yet written is rebuilt from
        the headers after the producer snapshot (which is written after the epochs)."""
        with self._epochs_lock:
            self._epochs_pending = content
        self.log.worker.submit(self.write_pending_epochs)

    def write_pending_epochs(self) -> None:
        """Write the epoch file's newest content if it is not on disk yet; any thread. Among
        the log's sibling-file writers, so writes land in order and never in a deleted
        directory."""
        with self.log.sibling_files() as writable:
            with self._epochs_lock:
                content, self._epochs_pending = self._epochs_pending, None
            if content is None or not writable:
                return
            try:
                files.write_atomically(self.epochs.path, content)
            except BaseException:
                with self._epochs_lock:  # kept for the next try, unless a newer one came
                    if self._epochs_pending is None:
                        self._epochs_pending = content
                raise

    def write_snapshot(self, snapshot: tuple[bytes, bytes]) -> None:
        """Write what ``checkpoint_snapshot`` returned (four fsyncs): safe from any thread.
        Serialised with the log's own checkpoint writers and its deletion, so a deleted
        partition's directory never gets a file back. The epochs go first: a producer
        snapshot bounds the header scan that repairs a lagging epoch file on open."""
        self.write_pending_epochs()
        high_watermark, producers = snapshot
        with self.log.sibling_files() as writable:
            if not writable:
                return
            files.write_atomically(self.directory / HIGH_WATERMARK_FILE, high_watermark)
            files.write_atomically(self.directory / SNAPSHOT_FILE, producers)

    def checkpoint(self) -> None:
        """Persist the high watermark and the producer snapshot if they changed."""
        snapshot = self.checkpoint_snapshot()
        if snapshot is not None:
            self.write_snapshot(snapshot)
