"""The copy loop: source partitions into same-numbered target partitions, batch by batch.

Why it cannot leave gaps or duplicates, with no state of its own:
- Fetched batches go to the target with ``send_section`` (explicit partition, the
  idempotent producer, acks="all"), and a partition's next batch is sent only after the one
  before it was acknowledged (``_copy``), so a target partition receives its source
  partition's records in source order with no hole; each Produce batch is written whole or
  not at all (a send is one section, one Produce batch, sized from the target topic's limit
  by ``runs.py``; a single fetched batch larger than a run is cut into several).
- On start, and after any failure, the mirror reads the last record of every target
  partition and resumes the source at its ``tslog.mirror.offset`` header + 1 (the source's
  earliest when the target partition is empty). Whatever reached the target before a crash
  or SIGKILL - acknowledged or not - is therefore neither copied again nor skipped.
Failures of a cluster (down, a timeout) are retried with exponential backoff: one WARNING
when the mirror stops making progress, one when it is back; it never skips a record. A run
the target refuses for its own partition (e.g. too large) pauses that partition alone
(``paused.py``); a target topic whose ``max.message.bytes`` cannot take every record the
source accepts is not copied, with an ERROR naming the setting (``limits.py``), and checked
again every checkpoint interval; the other topics copy on.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from contextlib import ExitStack
from typing import NamedTuple

from .. import Admin, Consumer, Producer, TopicPartition
from ..cli_common import error_line
from ..errors import ClientClosedError, ConnectionLostError, RequestTimedOutError, TslogError
from ..security import Security
from .checkpoints import CHECKPOINT_TOPIC, Checkpointer
from .logins import LOGIN_ERRORS, MirrorLoginError, login_of
from .limits import SETTING, limit_problem, target_limit
from .lookup import reader, resume_offset
from .metrics import MirrorMetrics
from .paused import PausedPartitions
from .runs import plan_runs, run_bytes
from .sections import build_section

log = logging.getLogger("tslog.mirror")

# Topic configs worth the same value on the target; others stay the target's own: timestamp
# bounds (mirrored CreateTimes may be old), min.insync.replicas and flush.* (the target
# cluster's size and durability), index sizes. max.message.bytes is the source's plus the
# reserved headers' room (``limits.py``).
COPIED_CONFIGS = ("retention.ms", "retention.bytes", "segment.bytes", "segment.ms")
_SEND_TIMEOUT_S = 130.0  # a little past the producer's delivery_timeout_ms (120 s)
_BATCH_BYTES = 1 << 20
# A refused run raising one of these is the cluster's failure, not its partition's: the
# whole session is retried (``Mirror.run``).
_CLUSTER_ERRORS = (ConnectionLostError, RequestTimedOutError, ClientClosedError)


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
        self.blocked: dict[str, str] = {}  # source topic -> why its target cannot take it
        self.paused = PausedPartitions(backoff_max_s)
        self._counts: dict[str, int] = {}  # source topic -> partitions
        self._assigned: set[TopicPartition] = set()
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
            return self._copy_until(stop, _Clients(source_admin, target_admin, target_reader,
                                                   consumer, producer))

    def _copy_until(self, stop, clients: "_Clients") -> bool:
        """Resume every partition where the target ends, then copy until ``stop`` (True)
        or until the topic list changes (False)."""
        topics = self._setup_topics(clients.source_admin, clients.target_admin)
        self._assigned = set()
        clients.consumer.assign([])
        self._admit(clients, [TopicPartition(topic, partition)
                              for topic, count in sorted(topics.items())
                              if topic not in self.blocked for partition in range(count)])
        if self._failing:
            log.warning("mirror running again: resumed from the target's last records")
            self._failing = False
        log.info("mirroring %d partitions of %d topics", len(self._assigned), len(topics))
        next_check = time.monotonic() + self.checkpoint_interval_s
        while not stop.is_set():
            batches = clients.consumer.poll_batches(timeout_ms=200)
            if batches:
                self._copy(batches, clients)
            self._admit(clients, self.paused.due())
            self._lag(clients.consumer)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + self.checkpoint_interval_s
                self._checkpointer.write(clients.source_admin, clients.target_admin,
                                         clients.target_reader, clients.producer, self.targets)
                self._recheck_blocked(clients)
                if self._matching(clients.source_admin) != topics:
                    return False
        clients.producer.flush()
        return True

    def _admit(self, clients: "_Clients", partitions) -> None:
        """Add source ``partitions`` to the copy, each resumed by the restart rule; the
        partitions copying already keep their positions."""
        if not partitions:
            return
        starts = {tp: resume_offset(clients.target_reader,
                                    TopicPartition(self.targets[tp.topic], tp.partition))
                  for tp in partitions}
        self._assigned.update(starts)
        clients.consumer.assign(sorted(self._assigned))
        for tp, start in starts.items():
            self.paused.resumed(tp)
            if start is None:
                clients.consumer.seek_to_beginning(tp)
            else:
                clients.consumer.seek(tp, start)

    def _matching(self, admin: Admin) -> dict[str, int]:
        """Source topics to mirror -> partition count."""
        described = {}
        for name in sorted(admin.list_topics()):
            if self.pattern.fullmatch(name) and name != CHECKPOINT_TOPIC:
                described[name] = len(admin.describe_topic(name).partitions)
        return described

    def _setup_topics(self, source_admin: Admin, target_admin: Admin) -> dict[str, int]:
        """Create missing target topics (sized for the reserved headers) and check the
        existing ones' limits; returns every matching source topic, blocked ones included."""
        topics = self._matching(source_admin)
        existing = set(target_admin.list_topics())
        for topic, count in topics.items():
            name = self.target_topic(topic)
            self.targets[topic] = name
            self._counts[topic] = count
            source_configs = source_admin.describe_configs(topic)
            if name not in existing:
                copied = {key: source_configs[key].value for key in COPIED_CONFIGS
                          if key in source_configs and source_configs[key].source == "topic"}
                copied[SETTING] = str(target_limit(source_configs))
                target_admin.create_topic(name, count, self.replication_factor, copied,
                                          exist_ok=True)
                log.info("created %s on the target (%d partitions)", name, count)
            self._check_limit(topic, source_configs, target_admin.describe_configs(name))
        return topics

    def _check_limit(self, topic: str, source_configs: dict, target_configs: dict) -> bool:
        """True if the target topic takes every record the source does; else block the
        topic and log why (once per distinct reason)."""
        problem = limit_problem(self.targets[topic], source_configs, target_configs)
        if problem is None:
            self.run_bytes[topic] = run_bytes(target_configs)
            return True
        if self.blocked.get(topic) != problem:
            log.error("not copying %s: %s", topic, problem)
            self.metrics.errors.labels("TargetLimitTooSmall").inc()
        self.blocked[topic] = problem
        return False

    def _recheck_blocked(self, clients: "_Clients") -> None:
        """Start copying a blocked topic once its target topic's limit was raised."""
        for topic in sorted(self.blocked):
            if self._check_limit(topic, clients.source_admin.describe_configs(topic),
                                 clients.target_admin.describe_configs(self.targets[topic])):
                del self.blocked[topic]
                log.warning("copying %s: its target topic's %s is large enough now", topic,
                            SETTING)
                self._admit(clients, [TopicPartition(topic, p)
                                      for p in range(self._counts[topic])])

    def _copy(self, batches, clients: "_Clients") -> None:
        """Send the fetched batches in waves: each wave sends the next run of every
        partition and waits for them all. A partition's next run therefore goes out only
        after the one before it was acknowledged: were one to fail (the producer then takes
        a new id and sequence), no later run of its partition can land after the hole; the
        partition is paused (``_pause``) and resumed alone by the restart rule. A run is one
        or more consecutive slices of fetched batches of one partition (``runs.py``): one
        ``send_section``, one Produce batch (``batch_size`` is larger), one round trip."""
        queues = plan_runs(batches, self.run_bytes)
        wave = self._next_wave(queues)
        while wave:
            futures = [clients.producer.send_section(*prepared[:3]) for prepared in wave]
            # The next wave's sections are built while this one is on the wire; it is sent only
            # after every batch of this one was acknowledged.
            following = self._next_wave(queues)
            failed = set()
            for prepared, future in zip(wave, futures):
                batch = prepared[3]
                try:
                    last = future.last(timeout=_SEND_TIMEOUT_S)
                except TslogError as error:
                    if isinstance(error, _CLUSTER_ERRORS):
                        raise
                    failed.add((batch.topic, batch.partition))
                    queues.pop((batch.topic, batch.partition), None)
                    self._pause(clients, TopicPartition(batch.topic, batch.partition), error)
                    continue
                self._account(*prepared[3:], last.log_append_time)
            wave = [prepared for prepared in following
                    if (prepared[3].topic, prepared[3].partition) not in failed]

    def _next_wave(self, queues: dict) -> list:
        """The next run of every partition that has one, prepared for ``send_section``."""
        wave = [self._prepare(queue.pop(0)) for queue in queues.values() if queue]
        for key in [key for key, queue in queues.items() if not queue]:
            del queues[key]
        return wave

    def _pause(self, clients: "_Clients", tp: TopicPartition, error: TslogError) -> None:
        """Take a partition whose run the target refused out of the copy (``paused.py``)."""
        backoff = self.paused.pause(tp)
        self._assigned.discard(tp)
        clients.consumer.assign(sorted(self._assigned))
        self.metrics.errors.labels(type(error).__name__).inc()
        log.warning("%s[%d]: the target refused a run: %s; this partition alone is retried "
                    "in %.1f s from the target's last record (nothing is skipped; the other "
                    "partitions keep copying)", tp.topic, tp.partition, error_line(error),
                    backoff)

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
        if self.paused.recovered(TopicPartition(batch.topic, batch.partition)):
            log.warning("%s[%d]: copying again", batch.topic, batch.partition)

    def _lag(self, consumer: Consumer) -> None:
        for tp in self._assigned:
            end = consumer.highwater(tp)
            if end is not None:
                lag = max(0, end - consumer.position(tp))
                self.metrics.lag_records.labels(tp.topic, str(tp.partition)).set(lag)


class _Clients(NamedTuple):
    """One session's clients of both clusters."""

    source_admin: Admin
    target_admin: Admin
    target_reader: Consumer
    consumer: Consumer
    producer: Producer
