"""A ``tslog mirror`` process and log comparisons for the mirror's integration tests."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tslog.client import Consumer, TopicPartition
from tslog.client.mirror.headers import create_time_of, source_of, without_reserved


def wait_for(predicate, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class MirrorProcess:
    """``python -m tslog.client.cli mirror ARGS``, its stderr kept in ``log_path``."""

    def __init__(self, log_path: Path, *args: str) -> None:
        self.args = [sys.executable, "-m", "tslog.client.cli", "mirror", *args]
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self) -> "MirrorProcess":
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.args, stdout=log, stderr=log)
        return self

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def terminate(self) -> int:
        self.process.terminate()
        return self.process.wait(30)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()


def end_offsets(bootstrap: str, topic: str, partitions: int,
                security=None) -> dict[int, int]:
    with Consumer(bootstrap, security=security) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: end for tp, end in consumer.end_offsets(tps).items()}


def read_all(bootstrap: str, topic: str, partitions: int, security=None) -> dict[int, list]:
    """Every record of ``topic``, per partition, in offset order."""
    ends = end_offsets(bootstrap, topic, partitions, security)
    found: dict[int, list] = {p: [] for p in range(partitions)}
    with Consumer(bootstrap, auto_offset_reset="earliest", security=security) as consumer:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + 30
        while any(len(found[p]) < ends[p] for p in found) and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=200):
                found[record.partition].append(record)
    return found


def as_source(records: list) -> list:
    """What a mirrored record must equal on the source: (key, value, headers, CreateTime);
    the source CreateTime travels in a reserved header (the target's is the source LAT)."""
    return [(r.key, r.value, without_reserved(r.headers), create_time_of(r)) for r in records]


def source_offsets(records: list) -> list[int]:
    return [source_of(r.headers)[1] for r in records]


def copied_count(bootstrap: str, topic: str, partitions: int) -> int:
    """Records in ``topic`` on ``bootstrap``; 0 while the mirror has not created it."""
    from tslog.client import Admin

    with Admin(bootstrap) as admin:
        if topic not in admin.list_topics():
            return 0
    return sum(end_offsets(bootstrap, topic, partitions).values())
