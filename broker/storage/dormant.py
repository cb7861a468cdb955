"""What a cleanly closed log's directory says about it, read without opening the log.

Why: a broker's start leaves every cleanly closed log unopened (dormant) until its first
use (``PartitionLog(dormant=True)``), so ten thousand partitions start in the time of a
directory listing instead of ten thousand opens. The metrics scrape (sizes and offsets of
every partition), DescribeLogDirs and the retention pass still look at every log; opening
the logs for them would undo that. A dormant log does not change, so what they need is read
here once, from the files a clean close leaves, and kept until the log is opened:

- the segments' base offsets and sizes, and the index files' sizes (trimmed to their entries
  by the clean close): one listing of the directory;
- the log end offset and the last LogAppendTime: the ``recovery-point`` checkpoint, which a
  clean close writes at the log end;
- the log start offset: the first segment's base, moved up by ``log-start-offset``
  (DeleteRecords);
- the first LogAppendTime of the oldest segment (entry 0 of its time index): a lower bound
  of that segment's newest LAT, so retention by time can tell that nothing has expired yet.

``read_facts`` returns None when a file is missing or unreadable; the caller then opens the
log, which judges the files properly (and recovers what needs it).
"""

from __future__ import annotations

import os
from typing import NamedTuple

from tslog.protocol.batch_header import NO_TIMESTAMP

from . import files
from .config import LogConfig
from .recovery import read_checkpoint
from .start_offset import StartOffset

_INDEX_KINDS = {files.OFFSET_INDEX_SUFFIX: "offset", files.TIME_INDEX_SUFFIX: "time",
                files.CREATE_TIME_INDEX_SUFFIX: "create_time"}


class DormantFacts(NamedTuple):
    log_start_offset: int
    log_end_offset: int
    segment_bases: tuple[int, ...]  # oldest first
    segment_sizes: tuple[int, ...]
    index_bytes: dict[str, int]  # offset, time, create_time
    first_log_append_time: int  # of the oldest segment's first batch (NO_TIMESTAMP: empty)
    last_log_append_time: int

    @property
    def size_bytes(self) -> int:
        return sum(self.segment_sizes)


def read_facts(directory: str) -> DormantFacts | None:
    """The facts of a cleanly closed log's ``directory``, or None if they cannot be read."""
    checkpoint = read_checkpoint(directory)
    if checkpoint is None:
        return None
    sizes: dict[int, int] = {}
    index_bytes = dict.fromkeys(_INDEX_KINDS.values(), 0)
    try:
        for entry in os.scandir(directory):
            base = files.parse_base_offset(entry.name)
            if base is None:
                continue
            suffix = entry.name[20:]
            if suffix == files.LOG_SUFFIX:
                sizes[base] = entry.stat().st_size
            elif suffix in _INDEX_KINDS:
                index_bytes[_INDEX_KINDS[suffix]] += entry.stat().st_size
        first = min(sizes) if sizes else None
        first_time = NO_TIMESTAMP
        if first is not None and sizes[first] > 0:
            first_time = _first_entry_time(os.path.join(
                directory, f"{first:020d}{files.TIME_INDEX_SUFFIX}"))
    except (OSError, ValueError):
        return None
    end, last_time = checkpoint
    base = first if first is not None else end
    start = StartOffset(directory).offset
    start = max(base, min(start, end))
    bases = tuple(sorted(sizes))
    return DormantFacts(start, end, bases, tuple(sizes[b] for b in bases), index_bytes,
                        first_time, last_time)


def may_expire(facts: DormantFacts | None, config: LogConfig, now_ms: int) -> bool:
    """Whether retention (``retention.expired_segments``) might delete anything of a dormant
    log with these facts; True when they could not be read (open the log and see). The
    oldest segment's first LAT is at most its newest, so a log whose oldest batch is younger
    than ``retention.ms`` has nothing to expire by time."""
    if facts is None:
        return True
    sizes = facts.segment_sizes
    if not facts.size_bytes:
        return False  # no batch: nothing to delete
    first_end = facts.segment_bases[1] if len(sizes) > 1 else facts.log_end_offset
    if facts.log_start_offset >= first_end:
        return True  # DeleteRecords passed the oldest segment
    if config.retention_bytes >= 0 and len(sizes) > 1 and (
            facts.size_bytes - sizes[0] >= config.retention_bytes):
        return True
    return (config.retention_ms >= 0
            and now_ms - facts.first_log_append_time > config.retention_ms)


def _first_entry_time(path: str) -> int:
    """The LogAppendTime of a time index's entry 0 (its first 8 bytes, little-endian)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        raw = os.pread(fd, 8, 0)
    finally:
        os.close(fd)
    if len(raw) < 8:
        raise ValueError(f"{path}: no entry 0")
    return int.from_bytes(raw, "little", signed=True)
