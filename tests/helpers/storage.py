"""Builders shared by the storage tests."""

from __future__ import annotations

from pathlib import Path

from tslog.broker.storage import LogConfig, ManualClock, PartitionLog
from tslog.protocol.records import build_batch, iter_records

START_MS = 1_700_000_000_000


def make_batch(count: int = 1, create_time: int | list[int] = START_MS, value_size: int = 20) -> bytes:
    """A batch of ``count`` records whose values name their position in the batch."""
    values = [(b"v%05d" % i).ljust(value_size, b".") for i in range(count)]
    return build_batch(values, create_times=create_time)


def open_log(directory: Path, clock: ManualClock | None = None, worker=None, budget=None,
             **config) -> PartitionLog:
    """A PartitionLog with dotted-name config overrides given as keyword_with_underscores
    (``worker``: its I/O worker; None runs disk commands at once; ``budget``: its
    ``HandleBudget``, None the process's)."""
    settings = {key.replace("_", "."): value for key, value in config.items()}
    return PartitionLog(directory, LogConfig.from_mapping(settings), clock or ManualClock(START_MS),
                        worker, budget)


def read_all(log: PartitionLog, start: int | None = None) -> list:
    """Every record from ``start`` (default: log start) to the end, via the fetch path."""
    offset = log.log_start_offset if start is None else start
    records = []
    while True:
        chunk = log.read(offset, max_bytes=1 << 16)
        if not chunk:
            return records
        position = 0
        view = memoryview(chunk)
        while position < len(chunk):
            length = int.from_bytes(chunk[position + 16 : position + 20], "little")
            batch = bytes(view[position : position + length])
            records.extend(iter_records(batch))
            position += length
        offset = records[-1].offset + 1
