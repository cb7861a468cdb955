"""Opening a partition directory: checkpoint, clean-shutdown marker and crash recovery.

Two small files beside the segments say how far the log can be trusted:

``recovery-point``  text ``"<offset> <last_log_append_time>\\n"``, replaced atomically. Every
                    offset below it was fsynced; the LAT is the largest ever assigned, so the
                    rules of time hold even if the segments that carried it are gone.
``clean-shutdown``  present only between a clean close and the next open.

On open, segments wholly below the recovery point (all of them after a clean shutdown) are
trusted: only their indexes are checked, cheaply, and rebuilt if they fail. From the recovery
point on, every batch is validated (header, CRC, offset continuity, LAT order); the first bad
batch and everything after it (later segments included) is removed, because data after a hole
cannot be served in order. Nothing that was flushed before the crash is lost, since a flushed
batch validates. In the segment holding the recovery point, the index entries of the batches
before it are kept when they pass the sanity checks, and validation starts at the last of
them (``Segment.recover``), so recovery re-reads the unflushed tail, not the whole segment.

Then, as Kafka does, what recovery checked is made durable (``fdatasync`` of the recovered
logs and indexes) and the caller moves the recovery point to the log end and writes it: the
next crash re-reads only what was appended after this open, however often the broker
crashes in a row. ``RecoveryReport.bytes_scanned`` (logged, and exported as a metric) says
how much of the log recovery re-read.

Handles: sealed segments are released after loading (``Segment.release``); the first read
of one opens its files again (``handles.py`` bounds how many stay open).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from tslog.protocol.batch_header import NO_TIMESTAMP

from . import files
from .segment import Segment

log = logging.getLogger("tslog.storage")


@dataclass
class RecoveryReport:
    """What opening the log found and did; exported as metrics by the broker."""

    clean_shutdown: bool = False
    segments_loaded: int = 0
    segments_recovered: int = 0
    segments_deleted: int = 0
    indexes_rebuilt: int = 0
    bytes_scanned: int = 0  # log bytes recovery re-read and validated (the unflushed tail)
    bytes_truncated: int = 0
    recovery_point: int = 0  # where validation started (the checkpoint's offset)
    duration_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def read_checkpoint(directory: Path) -> tuple[int, int] | None:
    """Return (recovery point, last LAT), or None when missing or unreadable."""
    try:
        offset_text, time_text = files.read_small(
            os.path.join(directory, files.RECOVERY_POINT_FILE)).split()
        return int(offset_text), int(time_text)
    except (OSError, ValueError):
        return None


def write_checkpoint(directory: Path, recovery_point: int, last_log_append_time: int,
                     sync: bool = True) -> None:
    files.write_atomically(
        directory / files.RECOVERY_POINT_FILE,
        f"{recovery_point} {last_log_append_time}\n".encode(), sync=sync)


def clean_marker(directory: Path) -> Path:
    return directory / files.CLEAN_SHUTDOWN_FILE


def list_segment_bases(directory: Path) -> list[int]:
    """Base offsets of the segments present, after removing leftovers of interrupted work:
    temporary files and index files whose log is gone."""
    bases = set()
    orphans = []
    for entry in os.scandir(directory):
        if entry.name.endswith(files.TEMP_SUFFIX):
            os.unlink(entry.path)
            continue
        base = files.parse_base_offset(entry.name)
        if base is None:
            continue
        if entry.name.endswith(files.LOG_SUFFIX):
            bases.add(base)
        elif entry.name.endswith(files.INDEX_SUFFIXES):
            orphans.append((base, entry.path))
    for base, path in orphans:
        if base not in bases:
            os.unlink(path)
    return sorted(bases)


def open_segments(directory: Path, index_interval_bytes: int, index_capacity_bytes: int,
                  defer_sync: bool = False) -> tuple[list[Segment], int, RecoveryReport]:
    """Load (and if the last stop was not clean, recover) a log directory's segments, and
    save the recovery point at the log end when recovery validated and synced a tail, so
    the next crash re-reads only what comes after. Returns (segments, last LAT, report);
    the caller removes the clean-shutdown marker once the log is open.

    ``defer_sync``: nothing is fsynced and the recovery point stays where it was; the caller
    makes every recovered file durable at once (``files.sync_filesystem``, one call for a
    broker's ten thousand logs instead of six fsyncs each) and then calls
    ``save_recovery_point``."""
    segments, last_time, report = load_segments(
        directory, index_interval_bytes, index_capacity_bytes,
        os.path.exists(os.path.join(directory, files.CLEAN_SHUTDOWN_FILE)),
        read_checkpoint(directory), sync=not defer_sync)
    if not defer_sync and rewrote_anything(report):
        save_recovery_point(directory, segments[-1].next_offset, last_time)
    return segments, last_time, report


def rewrote_anything(report: RecoveryReport) -> bool:
    """Whether recovery validated, cut or deleted anything (its recovery point then moves)."""
    return bool(report.bytes_scanned or report.bytes_truncated or report.segments_deleted)


def save_recovery_point(directory: Path, offset: int, last_log_append_time: int,
                        sync: bool = True) -> None:
    """Write the recovery point a recovery earned, once what it checked is durable."""
    try:
        write_checkpoint(directory, offset, last_log_append_time, sync)
    except OSError as exc:
        # Only an optimisation: the old checkpoint stays, so the next recovery checks
        # more. A full disk must not stop the broker from starting (deleting a topic
        # is how an operator gets space back).
        log.warning("%s: recovery point not saved, the old one stays: %r",
                    directory.name, exc)


def save_recovered_point(plog) -> None:
    """For a ``PartitionLog`` opened with ``defer_sync``, once the caller's
    ``sync_filesystem`` made what recovery checked durable: move the recovery point to the
    log end, as a log opened without it does by itself. Replaced but not fsynced: until a
    checkpoint or the shutdown syncs it, a crash leaves the older point, and recovery then
    checks a little more. Nothing to do when recovery rewrote nothing."""
    if rewrote_anything(plog.recovery_report):
        with plog.sibling_files() as still_open:
            if still_open:
                save_recovery_point(plog.directory, plog.log_end_offset,
                                    plog.last_log_append_time, sync=False)


def load_segments(
    directory: Path,
    index_interval_bytes: int,
    index_capacity_bytes: int,
    clean: bool,
    checkpoint: tuple[int, int] | None,
    sync: bool = True,
) -> tuple[list[Segment], int, RecoveryReport]:
    """Open, check and if needed recover every segment; return (segments, last LAT, report).

    The last segment is left writable (active); the others are sealed. ``sync`` False:
    what recovery rewrote is not fsynced here (``open_segments``' ``defer_sync``).
    """
    started = time.monotonic()
    report = RecoveryReport(clean_shutdown=clean)
    recovery_point, checkpoint_time = checkpoint if checkpoint else (0, NO_TIMESTAMP)
    report.recovery_point = recovery_point
    bases = list_segment_bases(directory)
    existing = bool(bases)
    if not clean and checkpoint is None and bases:
        report.notes.append("no usable recovery-point checkpoint: validating every segment")
    if not bases:
        bases = [recovery_point]
    # Segments before the one holding the recovery point were flushed: trust them.
    first_unflushed = 0
    if clean:
        first_unflushed = len(bases)
    elif checkpoint is not None:
        first_unflushed = max(0, sum(1 for base in bases if base <= recovery_point) - 1)
    segments, recovered, last_time = _open_segments(
        directory, bases, index_interval_bytes, index_capacity_bytes, first_unflushed,
        recovery_point if checkpoint else None, report)
    _settle(directory, segments, recovered, index_capacity_bytes, sync, report)
    report.duration_s = time.monotonic() - started
    _log_report(directory, report, clean, existing)
    if checkpoint is not None and recovery_point > segments[-1].next_offset:
        # Flushed data is never lost, so a recovery point past the log end means the log was
        # cut (a follower's truncation) and the crash came before the cut's checkpoint: that
        # checkpoint's LAT was a batch that is gone (the truncation makes the last LAT the
        # last remaining batch's, so the new leader's batches are accepted).
        report.notes.append(f"recovery point {recovery_point} is past the log end: the log "
                            "was cut since, its checkpointed LAT is not kept")
        checkpoint_time = NO_TIMESTAMP
    return segments, max(last_time, checkpoint_time), report


def _open_segments(directory: Path, bases: list[int], index_interval_bytes: int,
                   index_capacity_bytes: int, first_unflushed: int,
                   recovery_point: int | None, report: RecoveryReport):
    """Open the segments in order, trusting those before ``first_unflushed`` (if their
    indexes pass) and recovering the rest; a segment that does not follow the one before
    is deleted with every later one. Returns (segments, recovered ones, last LAT)."""
    segments: list[Segment] = []
    recovered: list[Segment] = []
    last_time = NO_TIMESTAMP
    for position, base in enumerate(bases):
        last = position == len(bases) - 1  # opened active at once, not mapped twice
        segment = Segment(directory, base, index_interval_bytes,
                          index_capacity_bytes=index_capacity_bytes if last else None)
        if segments and base != segments[-1].next_offset:
            report.notes.append(
                f"segment {base} does not follow offset {segments[-1].next_offset}: "
                "removing it and every later segment"
            )
            segment.delete()
            report.segments_deleted += len(bases) - position
            for later in bases[position + 1 :]:
                Segment(directory, later, index_interval_bytes).delete()
            break
        report.segments_loaded += 1
        trusted = position < first_unflushed
        if not (trusted and segment.load_trusted(last_time)):
            if trusted:
                report.indexes_rebuilt += 1
            holds_recovery_point = not trusted and position == first_unflushed
            _recover(segment, last_time, index_capacity_bytes,
                     recovery_point if holds_recovery_point else None, report)
            recovered.append(segment)
        segments.append(segment)
        if not segment.is_empty:
            last_time = segment.max_log_append_time
    return segments, recovered, last_time


def _recover(segment: Segment, last_time: int, index_capacity_bytes: int,
             recovery_point: int | None, report: RecoveryReport) -> None:
    report.segments_recovered += 1
    truncated = segment.recover(last_time, index_capacity_bytes, recovery_point)
    report.bytes_scanned += segment.recovery_scanned_bytes
    report.bytes_truncated += truncated
    if truncated:
        report.notes.append(f"segment {segment.base_offset}: cut {truncated} bytes of torn "
                            "or bad tail")


def _settle(directory: Path, segments: list[Segment], recovered: list[Segment],
            index_capacity_bytes: int, sync: bool, report: RecoveryReport) -> None:
    """Seal all but the last segment, make the last one active, and (``sync``) make what
    recovery rewrote durable before the caller moves the recovery point past it."""
    for segment in segments[:-1]:
        segment.seal()
    segments[-1].make_active(index_capacity_bytes)
    if sync:
        for segment in recovered:
            segment.sync()
        if report.segments_deleted:
            files.fsync_directory(directory)
    for segment in segments[:-1]:
        segment.release()


def _log_report(directory: Path, report: RecoveryReport, clean: bool, existing: bool) -> None:
    for note in report.notes:
        log.warning("%s: %s", directory.name, note)
    if not clean and existing:
        log.warning("%s: recovery scanned %d bytes in %d of %d segments from offset %d "
                    "(the recovery point) in %.3f s", directory.name, report.bytes_scanned,
                    report.segments_recovered, report.segments_loaded, report.recovery_point,
                    report.duration_s)
