"""The copy loop: source partitions into same-numbered target partitions, batch by batch.

Why it cannot leave gaps or duplicates, with no state of its own:
- Fetched batches go to the target with ``send_section`` (explicit partition, the
  idempotent producer, acks="all"), and a partition's next batch is sent only after the one
  before it was acknowledged (``_copy``), so a target partition receives its source
  partition's records in source order with no hole; each Produce batch is written whole or
  not at all (a send is one section, one Produce batch, kept under ``_RUN_BYTES``; a
  single fetched batch larger than that is cut into several).
- On start, and after any failure, the mirror reads the last record of every target
  partition and resumes the source at its ``tslog.mirror.offset`` header + 1 (the source's
  earliest when the target partition is empty). Whatever reached the target before a crash
  or SIGKILL - acknowledged or not - is therefore neither copied again nor skipped.
Failures (either cluster down, a timeout) are retried with exponential backoff: one WARNING
when the mirror stops making progress, one when it is back; it never skips a record.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from contextlib import ExitStack

from .. import Admin, Consumer, Producer, TopicPartition
from ..cli_common import error_line
from ..errors import TslogError
from ..security import Security
from .checkpoints import CHECKPOINT_TOPIC, Checkpointer
from .logins import LOGIN_ERRORS, MirrorLoginError, login_of
from .lookup import reader, resume_offset
from .sections import Slice, build_section
from .metrics import MirrorMetrics

log = logging.getLogger("tslog.mirror")

# Topic configs worth the same value on the target; others stay the target's own: timestamp
# bounds (mirrored CreateTimes may be old), min.insync.replicas and flush.* (the target
# cluster's size and durability), index sizes.
COPIED_CONFIGS = ("retention.ms", "retention.bytes", "segment.bytes", "segment.ms",
                  "max.message.bytes")
_SEND_TIMEOUT_S = 130.0  # a little past the producer's delivery_timeout_ms (120 s)
# Bytes per send_section (keys, values, headers and columns): one Produce batch, at most
# 7/8 of the target topic's max.message.bytes (896 KiB for the default 1 MiB; ``_weight``
# over-counts a record's reserved headers, so the batch stays under the limit) and never
# more than ``_RUN_BYTES``. Fewer, larger runs mean fewer acknowledged round trips: each
# wave waits for the last.
_RUN_BYTES = 896 << 10
_BATCH_BYTES = 1 << 20
_MIN_RUN_BYTES = 1024  # a topic allowing less than this still gets one record per run
_HEADER_BYTES = 110  # per record: 90 B of reserved headers, 16 B of columns, rounded up


class Mirror:
    """Copy every topic of ``source`` whose name matches ``topics`` (a regex, whole name) to
    ``target`` as ``rename.format(topic=...)``; ``run(stop)`` until ``stop`` is set."""

    def __init__(self, source: str, target: str, topics: str, *, rename: str = "{topic}",
                 replication_factor: int = 1, checkpoint_interval_s: float = 5.0,
                 backoff_max_s: float = 5.0, metrics: MirrorMetrics | None = None,
                 source_security: Security | None = None,
                 target_security: Security | None = None) -> None:
        self.source, self.target = source, target
        self.source_security, self.target_security = source_security, target_security
        self.pattern = re.compile(topics)
        self.rename = rename
        self.replication_factor = replication_factor
        self.checkpoint_interval_s = checkpoint_interval_s
        self.backoff_max_s = backoff_max_s
        self.metrics = metrics or MirrorMetrics()
        self.targets: dict[str, str] = {}  # source topic -> target topic
        self.run_bytes: dict[str, int] = {}  # source topic -> bytes per send_section
        self._failing = False
        self._checkpointer = Checkpointer(replication_factor)

    def target_topic(self, topic: str) -> str:
        return self.rename.format(topic=topic)

    def run(self, stop: threading.Event) -> None:
        backoff = 0.1
        while not stop.is_set():
            try:
                if self._session(stop):
                    return
                backoff = 0.1
            except MirrorLoginError:
                raise  # a wrong password does not heal by waiting (logins.py)
            except LOGIN_ERRORS as error:
                raise MirrorLoginError(f"a cluster refused the login: {error_line(error)}") \
                    from None
            except (TslogError, OSError, TimeoutError) as error:
                self.metrics.errors.labels(type(error).__name__).inc()
                if not self._failing:
                    log.warning("mirror interrupted: %s; retrying with backoff (nothing is "
                                "skipped)", error_line(error))
                    self._failing = True
                stop.wait(backoff)
                backoff = min(backoff * 2, self.backoff_max_s)

    def _session(self, stop: threading.Event) -> bool:
        """Open both clusters' clients, each with its own security (a refused login names
        its cluster), then ``_copy_until``."""
        options = {"request_timeout_ms": 10_000}
        with ExitStack() as clients:
            with login_of("source", self.source):
                source_admin = clients.enter_context(
                    Admin(self.source, security=self.source_security, **options))
                source_admin.list_topics()  # logs in now, so a refusal names its cluster
                consumer = clients.enter_context(Consumer(
                    self.source, auto_offset_reset="earliest", security=self.source_security))
            with login_of("target", self.target):
                target_admin = clients.enter_context(
                    Admin(self.target, security=self.target_security, **options))
                target_admin.list_topics()
                target_reader = clients.enter_context(reader(self.target,
                                                             self.target_security))
                producer = clients.enter_context(Producer(
                    self.target, linger_ms=0, batch_size=_BATCH_BYTES,
                    security=self.target_security))
            return self._copy_until(stop, source_admin, target_admin, target_reader, consumer,
                                    producer)

    def _copy_until(self, stop, source_admin, target_admin, target_reader, consumer,
                    producer) -> bool:
        """Resume every partition where the target ends, then copy until ``stop`` (True)
        or until the topic list changes (False)."""
        topics = self._setup_topics(source_admin, target_admin)
        starts = {TopicPartition(topic, partition): resume_offset(
                      target_reader, TopicPartition(self.targets[topic], partition))
                  for topic, count in sorted(topics.items()) for partition in range(count)}
        partitions = list(starts)
        consumer.assign(partitions)
        for tp, start in starts.items():
            if start is None:
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, start)
        if self._failing:
            log.warning("mirror running again: resumed from the target's last records")
            self._failing = False
        log.info("mirroring %d partitions of %d topics", len(partitions), len(topics))
        next_check = time.monotonic() + self.checkpoint_interval_s
        while not stop.is_set():
            batches = consumer.poll_batches(timeout_ms=200)
            if batches:
                self._copy(batches, producer)
            self._lag(consumer, partitions)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + self.checkpoint_interval_s
                self._checkpointer.write(source_admin, target_admin, target_reader,
                                         producer, self.targets)
                if self._matching(source_admin) != topics:
                    return False
        producer.flush()
        return True

    def _matching(self, admin: Admin) -> dict[str, int]:
        """Source topics to mirror -> partition count."""
        described = {}
        for name in sorted(admin.list_topics()):
            if self.pattern.fullmatch(name) and name != CHECKPOINT_TOPIC:
                described[name] = len(admin.describe_topic(name).partitions)
        return described

    def _setup_topics(self, source_admin: Admin, target_admin: Admin) -> dict[str, int]:
        topics = self._matching(source_admin)
        existing = set(target_admin.list_topics())
        for topic, count in topics.items():
            name = self.target_topic(topic)
            self.targets[topic] = name
            if name not in existing:
                configs = source_admin.describe_configs(topic)
                copied = {key: configs[key].value for key in COPIED_CONFIGS
                          if key in configs and configs[key].source == "topic"}
                target_admin.create_topic(name, count, self.replication_factor,
                                          copied or None, exist_ok=True)
                log.info("created %s on the target (%d partitions)", name, count)
            self.run_bytes[topic] = run_bytes(target_admin.describe_configs(name))
        return topics

    def _copy(self, batches, producer: Producer) -> None:
        """Send the fetched batches in waves: each wave sends the next run of every
        partition and waits for them all. A partition's next run therefore goes out only
        after the one before it was acknowledged: were one to fail for good (the producer
        then takes a new id and sequence), no later run of its partition can land after the
        hole, and the restart rule picks up exactly where the target ends. A run is one or
        more consecutive slices of fetched batches of one partition, up to ``run_bytes``: one
        ``send_section``, one Produce batch (``batch_size`` is larger), one round trip."""
        queues: dict = {}
        for batch in batches:
            limit = self.run_bytes[batch.topic]
            for piece in _slices(batch, limit):
                runs = queues.setdefault((batch.topic, batch.partition), [[]])
                if runs[-1] and sum(map(_weight, runs[-1])) + _weight(piece) > limit:
                    runs.append([])
                runs[-1].append(piece)
        wave = [self._prepare(queue.pop(0)) for queue in queues.values()]
        while wave:
            futures = [producer.send_section(*prepared[:3]) for prepared in wave]
            # The next wave's sections are built while this one is on the wire; it is sent only
            # after every batch of this one was acknowledged.
            queues = {key: queue for key, queue in queues.items() if queue}
            following = [self._prepare(queue.pop(0)) for queue in queues.values()]
            for prepared, future in zip(wave, futures):
                last = future.last(timeout=_SEND_TIMEOUT_S)
                self._account(*prepared[3:], last.log_append_time)
            wave = following

    def _prepare(self, run: list) -> tuple:
        """A run of fetched records as ``send_section`` arguments: one records section
        built from their columns with the reserved headers added (``sections.py``, no work
        per record). Returns (topic, section, partition, last batch, records, key + value
        bytes, last CreateTime)."""
        first, last = run[0].batch, run[-1].batch
        section = build_section(run, first.partition)
        return (self.targets[first.topic], section, first.partition, last,
                section.record_count, sum(piece.data_bytes for piece in run),
                int(last.columns.create_time[run[-1].stop - 1]))

    def _account(self, batch, count: int, size: int, create_time: int, target_lat: int) -> None:
        metrics = self.metrics
        metrics.records.labels(batch.topic).inc(count)
        metrics.bytes.labels(batch.topic).inc(size)
        labels = (batch.topic, str(batch.partition))
        metrics.lag_seconds.labels(*labels).set(max(0.0, time.time() - create_time / 1000))
        metrics.lat_delay.labels(*labels).set(
            (target_lat - batch.columns.log_append_time) / 1000)

    def _lag(self, consumer: Consumer, partitions) -> None:
        for tp in partitions:
            end = consumer.highwater(tp)
            if end is not None:
                lag = max(0, end - consumer.position(tp))
                self.metrics.lag_records.labels(tp.topic, str(tp.partition)).set(lag)



def _weight(piece: Slice) -> int:
    """Roughly the bytes a slice becomes on the target, reserved headers included (and the
    records' own headers, measured only when the source batch has any)."""
    weight = piece.data_bytes + _HEADER_BYTES * piece.count
    own = piece.batch.columns.headers
    if own is not None:
        weight += sum(len(name) + len(value) + 4 for entry in own[piece.start:piece.stop]
                      if entry for name, value in entry)
    return weight


def run_bytes(target_configs: dict) -> int:
    """Bytes per send_section for a target topic with these configs (see ``_RUN_BYTES``)."""
    entry = target_configs.get("max.message.bytes")
    limit = _RUN_BYTES if entry is None else int(entry.value) * 7 // 8
    return max(min(limit, _RUN_BYTES), _MIN_RUN_BYTES)


def _slices(batch, limit: int = _RUN_BYTES) -> list[Slice]:
    """A fetched batch's records from ``start`` on, cut in slices of at most about
    ``limit`` bytes on the target (one slice unless the source batch is that large)."""
    start, stop = batch.start, batch.columns.record_count
    if stop <= start:
        return []
    whole = Slice(batch, start, stop)
    pieces = -(-_weight(whole) // limit)
    if pieces <= 1:
        return [whole]
    step = -(-whole.count // pieces)
    return [Slice(batch, first, min(first + step, stop)) for first in range(start, stop, step)]
