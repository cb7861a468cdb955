"""The workload of a fault schedule and the properties checked after each fault.

``Writer`` sends numbered records with an idempotent acks=all producer from the clients'
host for the whole schedule and keeps every acknowledgement (offset, LogAppendTime).
``Ledger`` remembers every (offset -> value, LAT) ever read below the high watermark; each
``check`` reads the partition again from its current leader and asserts, by counting:

- every acknowledged record is present exactly once, at its acknowledged offset, with its
  acknowledged LAT (the leader's log is the ISR's: the HW only passes what every in-sync
  replica holds; at the end the replicas' files are compared byte for byte as well);
- no offset read below the HW before holds another record now; no record is there twice;
  no produce refused by a leader in doubt was written;
- LAT never decreases along the partition;
- a time lookup (ListOffsets) for every LAT, one ms before and after it, before the first
  and after the last, equals a brute-force scan of what was read.
"""

from __future__ import annotations

import bisect
import threading
import time

from tslog.client import Consumer, Producer, TopicPartition
from tslog.protocol.errors import ErrorCode
from tslog.protocol.records import iter_records, split_batches


class LeaderMoved(Exception):
    """The broker read from no longer leads (a failover still settling): ask again."""


class Writer(threading.Thread):
    """Sends b"v<n>" continuously until ``finish``."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.producer = Producer(bootstrap, acks="all", enable_idempotence=True, linger_ms=2,
                                 request_timeout_ms=5000)
        self.futures: list = []
        self.stopping = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stopping.is_set():
            if sum(1 for _, f in self.futures[-200:] if not f.done()) > 100:
                time.sleep(0.01)  # the leader is away: do not pile up millions of records
                continue
            value = b"v%07d" % i
            self.futures.append((value, self.producer.send(self.topic, value)))
            i += 1
            time.sleep(0.005)

    def acknowledged(self) -> dict[bytes, object]:
        """{value: RecordMetadata} of the sends acknowledged so far."""
        return {v: f.result() for v, f in list(self.futures)
                if f.done() and f.exception() is None}

    def finish(self) -> None:
        self.stopping.set()
        self.join(30)
        self.producer.flush(120_000)
        self.producer.close()


class GroupReader(threading.Thread):
    """A consumer-group member that reads the topic for the whole schedule and, after each
    poll, commits the offset past the last record it processed (failures retried on the
    next poll: the coordinator moves with the controller)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.consumer = Consumer(bootstrap, group_id=group, auto_offset_reset="earliest",
                                 enable_auto_commit=False)
        self.processed: set[int] = set()
        self.commits = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        self.consumer.subscribe([self.topic])
        while not self.stopping.is_set():
            try:
                records = self.consumer.poll(200)
                self.processed.update(r.offset for r in records)
                if records:
                    self.consumer.commit({TopicPartition(self.topic, 0): records[-1].offset + 1})
                    self.commits += 1
            except Exception:  # noqa: BLE001 - a fault: poll and commit again
                time.sleep(0.2)

    def finish(self) -> None:
        self.stopping.set()
        self.join(60)
        self.consumer.close()

    def check(self) -> int:
        """The group's committed offset is one past a record a member processed (or none
        was committed); returns it."""
        with Consumer(self.bootstrap, group_id=self.group, enable_auto_commit=False) as reader:
            committed = reader.committed(TopicPartition(self.topic, 0))
        assert committed is None or committed - 1 in self.processed, \
            f"committed offset {committed} is not one past a processed record"
        return committed


def read_partition(wire, topic: str) -> list[tuple[int, bytes, int]]:
    """(offset, value, LAT) of every record below the HW, from the leader at ``wire``."""
    out: list[tuple[int, bytes, int]] = []
    offset = 0
    while True:
        answer = wire.fetch(topic, 0, offset, max_bytes=4 << 20)
        if answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            raise LeaderMoved(f"fetch at {offset}")
        assert answer["error_code"] == 0, f"fetch at {offset}: {answer['error_code']}"
        records = bytes(answer["records"])
        if not records:
            return out
        for piece in split_batches(records):
            out.extend((r.offset, r.value, r.log_append_time) for r in iter_records(bytes(piece)))
        offset = out[-1][0] + 1


class Ledger:
    """What was read below the HW so far, and the checks against it."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.seen: dict[int, tuple[bytes, int]] = {}
        self.refused: set[bytes] = set()  # values a produce was refused for: never written
        self.checks = 0

    def check(self, wire, acknowledged: dict) -> int:
        """Run every property against the leader at ``wire``; return the records read."""
        last = max((m.offset for m in acknowledged.values()), default=-1)
        deadline = time.monotonic() + 30  # a new leader's HW catches up once followers fetch
        while len(log := read_partition(wire, self.topic)) <= last \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        offsets = [o for o, _, _ in log]
        assert offsets == list(range(len(log))), "offsets are not contiguous from 0"
        by_offset = {o: (v, t) for o, v, t in log}
        for offset, before in self.seen.items():
            assert by_offset.get(offset) == before, f"offset {offset} changed: {before} -> " \
                                                    f"{by_offset.get(offset)}"
        self.seen.update(by_offset)
        values = [v for _, v, _ in log]
        assert len(set(values)) == len(values), "a record is in the log twice"
        assert not self.refused & set(values), "a refused produce was written"
        for value, meta in acknowledged.items():
            assert by_offset.get(meta.offset, (None,))[0] == value, \
                f"acknowledged {value!r} at {meta.offset} but the log has {by_offset.get(meta.offset)}"
            assert by_offset[meta.offset][1] == meta.log_append_time, f"LAT of {value!r} moved"
        lats = [t for _, _, t in log]
        assert all(a <= b for a, b in zip(lats, lats[1:])), "LogAppendTime decreased"
        self._check_lookups(wire, lats)
        self.checks += 1
        return len(log)

    def _check_lookups(self, wire, lats: list[int]) -> None:
        if not lats:
            return
        distinct = sorted(set(lats))
        step = max(1, len(distinct) // 40)  # about 120 lookups per check
        targets = {distinct[0] - 1, distinct[-1] + 1}
        for t in distinct[::step]:
            targets |= {t - 1, t, t + 1}
        for target in sorted(targets):
            index = bisect.bisect_left(lats, target)
            answer = wire.list_offset(self.topic, 0, target)
            if answer["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                raise LeaderMoved(f"lookup of {target}")
            assert answer["error_code"] == 0
            if index < len(lats):
                assert answer["offset"] == index, \
                    f"lookup of {target}: broker {answer['offset']}, oracle {index}"
            else:  # after all we read: none, or a record written since
                assert answer["offset"] == -1 or answer["offset"] >= len(lats), \
                    f"lookup of {target} past the end: broker {answer['offset']}"
