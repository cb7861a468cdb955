"""The topic manager: topics as a metadata entry plus one PartitionLog per partition.

Owner: the broker's event loop. Every method here is synchronous. ``open_all`` (startup
recovery) and ``close_all`` (shutdown) run in a thread while nothing else touches the logs;
retention and checkpoints run in a worker thread (``apply_retention``, ``checkpoint``), which
the storage engine allows beside its owner's appends and reads. The topic maps change only on
the loop; the disk work of a change (records and logs written with fsyncs, files unlinked)
runs in a thread before or after, so a change never stalls the loop for long.

Crash safety of the two-step changes: a topic is written to the metadata store before its
directories are made (a crash in between leaves a topic whose missing logs ``open_all``
creates), and removed from the store before its directories go. On a single node the
removal is a deletion journal entry (``metadata.DeletionJournal``: it needs no free space, so
a full disk can be freed), cleared only once the directories are gone; ``open_all`` removes
the directories of every topic still in the journal. A deleted log's directory is renamed
aside before its files go (``storage.files``), and ``open_all`` removes what a crash left
renamed.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import NamedTuple

from tslog.protocol.errors import ErrorCode

from .config import BrokerConfig
from .metadata import MetadataStore, TopicMetadata, topic_name_problem
from .storage import Clock, ConfigError, LogClosedError, LogConfig, PartitionLog
from .storage.background import IOWorker
from .storage.fanout import map_in_threads
from .storage.handles import HandleBudget
from .storage.recovery import save_recovered_point
from .storage import shutdown
from .storage.files import (CLEAN_SHUTDOWN_FILE, partition_dir_name, partition_directories, remove_retired,
                            retired_directories, sync_filesystem)

log = logging.getLogger("tslog.broker.topics")

MAX_PARTITIONS = 10_000  # per topic; every partition costs three preallocated index files


class TopicError(Exception):
    """A topic operation refused, with the wire code and a message safe to send back."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


class ConfigEntry(NamedTuple):
    name: str
    value: str
    source: str  # "default" | "broker" | "topic"


def delete_logs(logs: list[PartitionLog]) -> None:
    """Close and remove logs no longer served (fsyncs and unlinks: off the loop)."""
    for plog in logs:
        plog.delete()


class TopicManager:
    def __init__(self, config: BrokerConfig, store: MetadataStore, clock: Clock) -> None:
        self.config = config
        self.data_dir = Path(config.data_dir)
        self.store = store
        self.clock = clock
        self.broker_log_config = config.log_config
        self.topics: dict[str, TopicMetadata] = {}
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.logs_added = 0  # one more per log put in ``logs`` (replication picks them up)
        # The data directory's disk work the loop must not wait for: seals of rolled
        # segments, the next segment's files, flush-policy fsyncs (``storage.background``).
        self.io_worker = IOWorker("tslog-io")
        # What sealed segments may keep open, shared by every log (``storage.handles``).
        self.handle_budget = HandleBudget(config.storage_open_files_max or None,
                                          config.storage_index_maps_max or None)

    # -- lifecycle -------------------------------------------------------------------------

    def open_all(self, topics: dict[str, TopicMetadata] | None = None,
                 hosted: set[tuple[str, int]] | None = None) -> None:
        """Open (and if needed recover) every partition of every known topic. Slow: thread.

        A single node leaves each log that was closed cleanly dormant (``PartitionLog``'s
        ``dormant``): one ``stat`` of its marker now, the opening at its first use. Only the
        logs that need recovery are opened here, so a clean start costs a stat a partition.
        A clustered broker passes the cluster's topics (read on the loop beforehand) and the
        partitions it holds a replica of; it knows every topic but opens only those logs,
        all of them now (its followers fetch at once, its leaders track their followers).
        """
        for directory in retired_directories(self.data_dir):  # a deletion a crash cut short
            log.info("removing %s, left by a deletion before a restart", directory.name)
            remove_retired(directory)
        if topics is None and self.store.pending_deletions():
            try:
                self.finish_deletion(min(self.store.pending_deletions()), [])
            except OSError as exc:  # a full disk: the journal keeps them for next time
                log.error("cannot finish the deletions of %s: %r",
                          sorted(self.store.pending_deletions()), exc)
        wanted = []
        for topic in (self.store.topics() if topics is None else topics).values():
            log_config = self.log_config_for(topic.configs)
            wanted += [(topic.name, partition, log_config) for partition in range(topic.partitions)
                       if hosted is None or (topic.name, partition) in hosted]
            self.topics[topic.name] = topic
        clean = [] if hosted is not None else [
            item for item in wanted if self._closed_cleanly(item[0], item[1])]
        for name, partition, log_config in clean:
            self._put_log(name, partition, self._dormant_log(name, partition, log_config))
        wanted = [item for item in wanted if (item[0], item[1]) not in self.logs]
        log.info("opening %d log(s) now (recovering those a crash left), %d at their first "
                 "use (closed cleanly)", len(wanted), len(clean))
        # On this one thread: opening with ``defer_sync`` waits on no fsync (what recovery
        # rewrote and the markers' removal are made durable once, after), so it is Python
        # work and page-cache reads, which threads only slow down: they contend for the GIL
        # at every system call.
        for name, partition, log_config in wanted:
            self._put_log(name, partition, self._open_log(name, partition, log_config))
        if wanted:  # the logs' clean-shutdown markers are gone and what recovery rewrote
            sync_filesystem(self.data_dir)  # is on disk, durably, before any append
            recovered = [plog for plog in self.logs.values()
                         if not plog.recovery_report.clean_shutdown]
            map_in_threads(save_recovered_point, recovered, "tslog-recovered")

    def _open_log(self, name: str, partition: int, log_config: LogConfig) -> PartitionLog:
        """One log, opened (recovered after a crash). Storage logs one line per recovered log
        (what it scanned, and any cut); a second line here would double ten thousand lines."""
        return PartitionLog(self._partition_dir(name, partition), log_config, self.clock,
                            self.io_worker, self.handle_budget, defer_sync=True)

    def _put_log(self, name: str, partition: int, plog: PartitionLog) -> None:
        """Serve ``plog`` as the partition's log; ``logs_added`` tells replication to look."""
        self.logs[name, partition] = plog
        self.logs_added += 1

    def _closed_cleanly(self, name: str, partition: int) -> bool:
        """Whether the partition's directory has its clean-shutdown marker (one ``stat``)."""
        return os.path.exists(os.path.join(self._partition_dir(name, partition),
                                           CLEAN_SHUTDOWN_FILE))

    def _dormant_log(self, name: str, partition: int, log_config: LogConfig) -> PartitionLog:
        """A cleanly closed log, left unopened until its first use (``PartitionLog.wake``)."""
        return PartitionLog(self._partition_dir(name, partition), log_config, self.clock,
                            self.io_worker, self.handle_budget, dormant=True)

    def close_all(self) -> None:
        """Flush and close every log, leaving clean-shutdown markers, with one file-system
        sync for all of them (``storage.shutdown``). Slow: thread."""
        self.io_worker.close()  # what the loop handed it runs first; closing logs seals the rest
        shutdown.close_all(((f"{topic}-{partition}", plog)
                            for (topic, partition), plog in self.logs.items()), self.data_dir)

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get((topic, partition))

    def _partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / partition_dir_name(topic, partition)

    # -- create / delete -------------------------------------------------------------------

    def validate_new_topic(self, name: str, partitions: int, replication_factor: int,
                           configs: dict[str, str], *, clustered: bool = False) -> TopicMetadata:
        """The topic a CreateTopics entry asks for, defaults resolved. Raises TopicError.

        A clustered broker checks the replication factor against the live brokers later
        (``EtcdMetadataStore.create_topic``); a single node only ever has factor 1.
        """
        problem = topic_name_problem(name)
        if problem:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name in self.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if partitions == -1:
            partitions = self.config.num_partitions
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"partitions must be in [1, {MAX_PARTITIONS}] (or -1 for the default)")
        if replication_factor == -1:
            replication_factor = 1
        if clustered and replication_factor < 1:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "replication_factor must be >= 1 (or -1 for the default, 1)")
        if not clustered and replication_factor != 1:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             "this single-node broker supports replication_factor 1 only")
        self._checked_log_config(configs)
        return TopicMetadata(name, partitions, dict(configs), replication_factor)

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict[str, str]) -> TopicMetadata:
        """Create a topic and its empty logs (single node). Raises TopicError."""
        topic = self.validate_new_topic(name, partitions, replication_factor, configs)
        self.publish_topic(topic, self.write_new_topic(topic))
        return topic

    def write_new_topic(self, topic: TopicMetadata) -> list[PartitionLog]:
        """The disk half of creating a topic (fsyncs: run it off the event loop): its durable
        record and its empty logs, opened but not yet served. It changes none of the maps
        requests read, so ``publish_topic`` on the loop makes the topic appear at once."""
        if topic.name in self.store.pending_deletions():  # its predecessor's files first
            self.finish_deletion(topic.name, [])
        self.store.put_topic(topic)
        logs: list[PartitionLog] = []
        try:
            for partition in range(topic.partitions):
                logs.append(self._create_log(topic, partition))
        except BaseException:  # a full disk: leave neither open logs nor a record behind
            delete_logs(logs)
            self.store.delete_topic(topic.name)
            try:
                self.store.deletion_done(topic.name)
            except OSError:  # still full: the journal keeps the name, harmlessly
                pass
            raise
        return logs

    def publish_topic(self, topic: TopicMetadata, logs: list[PartitionLog]) -> None:
        for partition, plog in enumerate(logs):
            self._put_log(topic.name, partition, plog)
        self.topics[topic.name] = topic
        log.info("created topic %s with %d partition(s), configs %s", topic.name,
                 topic.partitions, topic.configs)

    def open_new_partition(self, topic: TopicMetadata, partition: int) -> PartitionLog:
        """Create the empty log of a partition that is new to this broker."""
        plog = self._create_log(topic, partition)
        self._put_log(topic.name, partition, plog)
        return plog

    def _create_log(self, topic: TopicMetadata, partition: int) -> PartitionLog:
        directory = self._partition_dir(topic.name, partition)
        if directory.exists():  # orphan of a deletion interrupted by a crash
            shutil.rmtree(directory)
        return PartitionLog(directory, self.log_config_for(topic.configs), self.clock,
                            self.io_worker, self.handle_budget)

    def drop_local_logs(self, name: str,
                        partition: int | None = None) -> tuple[list[PartitionLog], list[Path]]:
        """Stop serving this broker's logs of a topic the cluster no longer has (or of one
        partition of it, moved to other brokers): each is closed and its directory renamed
        aside, quick enough for the loop. Returns the logs and the renamed directories,
        whose files ``remove_retired`` deletes in a thread."""
        removed = [self.logs.pop(key) for key in [k for k in self.logs if k[0] == name and (
            partition is None or k[1] == partition)]]
        retired = []
        for plog in removed:
            try:
                retired.append(plog.retire())
            except OSError as exc:  # closed all the same; a later create wipes the orphan
                log.error("cannot set %s aside for deletion: %r", plog.directory, exc)
        return removed, retired

    def grown_topic(self, name: str, count: int) -> TopicMetadata:
        """The topic with ``count`` partitions in all (a CreatePartitions entry), validated:
        partitions are only ever added, never removed. Raises TopicError."""
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        if count <= topic.partitions:
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {name!r} has {topic.partitions} partition(s); the new "
                             f"count {count} must be larger (partitions cannot be removed)")
        if count > MAX_PARTITIONS:
            raise TopicError(ErrorCode.INVALID_PARTITIONS,
                             f"the new count {count} is above the limit of {MAX_PARTITIONS}")
        return topic._replace(partitions=count)

    def write_new_partitions(self, grown: TopicMetadata) -> list[PartitionLog]:
        """The disk half of adding partitions (fsyncs: off the loop): the topic's record with
        the new count first, then the new partitions' empty logs, opened but not served. A
        crash in between leaves a record whose missing logs ``open_all`` creates; a failure
        deletes the logs made and puts the old record back. Raises OSError."""
        old = self.topics[grown.name]
        self.store.put_topic(grown)
        logs: list[PartitionLog] = []
        try:
            for partition in range(old.partitions, grown.partitions):
                logs.append(self._create_log(grown, partition))
        except BaseException:  # e.g. a full disk: leave the topic as it was
            delete_logs(logs)
            try:
                self.store.put_topic(old)
            except OSError as exc:  # the next start creates the record's missing logs
                log.error("cannot restore topic %s's record of %d partition(s): %r",
                          old.name, old.partitions, exc)
            raise
        return logs

    def publish_partitions(self, grown: TopicMetadata, logs: list[PartitionLog]) -> None:
        """Serve the logs ``write_new_partitions`` made; the existing partitions are untouched."""
        first = self.topics[grown.name].partitions
        for partition, plog in enumerate(logs, start=first):
            self._put_log(grown.name, partition, plog)
        self.topics[grown.name] = grown
        log.info("topic %s now has %d partition(s) (was %d)", grown.name, grown.partitions,
                 first)

    def set_topic(self, topic: TopicMetadata) -> None:
        """Take a topic's metadata from the cluster; new configs apply to its open logs."""
        previous = self.topics.get(topic.name)
        self.topics[topic.name] = topic
        if previous is not None and previous.configs != topic.configs:
            log_config = self.log_config_for(topic.configs)
            for key, plog in self.logs.items():
                if key[0] == topic.name:
                    plog.config = log_config
            log.info("topic %s configs now %s", topic.name, topic.configs)

    def forget_topic_durably(self, name: str) -> None:
        """First half of a deletion, on disk (run it off the loop): the topic's record goes,
        while the topic is still served. Raises TopicError for an unknown topic."""
        if name not in self.topics:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        self.store.delete_topic(name)

    def finish_deletion(self, name: str, logs: list[PartitionLog]) -> None:
        """Last half of a deletion, on disk (run it off the loop): the topic's logs go, and
        any directory left of it or of an earlier deletion still in the journal (one a crash
        or a full disk cut short), then the store hears that they are gone (which rewrites
        its record if the disk was too full before). Raises OSError."""
        delete_logs(logs)
        for pending in sorted(self.store.pending_deletions() | {name}):
            for directory in partition_directories(self.data_dir, pending):
                log.info("removing %s, left by a deletion of topic %s", directory.name, pending)
                shutil.rmtree(directory)
            self.store.deletion_done(pending)

    def unpublish_topic(self, name: str) -> list[PartitionLog]:
        """Stop serving a topic whose record is gone; return its logs for ``finish_deletion``."""
        topic = self.topics.pop(name)
        log.info("deleted topic %s", name)
        return [self.logs.pop((name, partition)) for partition in range(topic.partitions)]

    # -- configs ---------------------------------------------------------------------------

    def log_config_for(self, overrides: dict[str, str]) -> LogConfig:
        """The config of a stored topic. An override that is no longer valid (stored by an
        older version that accepted it, e.g. ``segment.index.bytes`` of 2^40) is skipped
        with a warning: the broker still starts, and serves the topic with the default."""
        try:
            return LogConfig.from_mapping(overrides, base=self.broker_log_config)
        except ConfigError:
            valid = {}
            for key, value in overrides.items():
                try:
                    LogConfig.from_mapping({key: value}, base=self.broker_log_config)
                except ConfigError as exc:
                    log.warning("ignoring a stored topic config: %s", exc)
                else:
                    valid[key] = value
            return LogConfig.from_mapping(valid, base=self.broker_log_config)

    def _checked_log_config(self, overrides: dict[str, str]) -> LogConfig:
        try:
            return LogConfig.from_mapping(overrides, base=self.broker_log_config)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None

    def describe_topic_configs(self, name: str) -> list[ConfigEntry]:
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        effective = self.log_config_for(topic.configs).to_mapping()
        return [ConfigEntry(key, str(value), self._source(key, topic.configs))
                for key, value in effective.items()]

    def describe_broker_configs(self) -> list[ConfigEntry]:
        entries = [ConfigEntry(key, str(value), self._source(key, {}))
                   for key, value in self.broker_log_config.to_mapping().items()]
        entries.append(ConfigEntry("num.partitions", str(self.config.num_partitions),
                                   "broker" if self.config.num_partitions != 1 else "default"))
        return entries

    def _source(self, key: str, topic_overrides: dict[str, str]) -> str:
        if key in topic_overrides:
            return "topic"
        return "broker" if key in self.config.log else "default"

    def apply_topic_configs(self, updated: TopicMetadata) -> None:
        """Serve a topic's new configs (already stored durably) from its live logs."""
        log_config = self.log_config_for(updated.configs)
        self.topics[updated.name] = updated
        for partition in range(updated.partitions):
            self.logs[updated.name, partition].config = log_config
        log.info("topic %s configs now %s", updated.name, updated.configs)

    def altered_topic(self, name: str, changes: dict[str, str | None]) -> TopicMetadata:
        """The topic with ``changes`` applied to its overrides, validated. Raises TopicError."""
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name!r}")
        overrides = dict(topic.configs)
        for key, value in changes.items():
            if value is None:
                overrides.pop(key, None)
            else:
                overrides[key] = value
        unknown = sorted(k for k, v in changes.items() if v is None and k not in _LOG_KEYS)
        if unknown:
            raise TopicError(ErrorCode.INVALID_CONFIG, f"unknown config keys: {', '.join(unknown)}")
        self._checked_log_config(overrides)
        return topic._replace(configs=overrides)

    # -- periodic work ---------------------------------------------------------------------

    def apply_retention(self, key: tuple[str, int], plog: PartitionLog,
                        keep_from: int | None = None) -> int:
        """Apply retention to one log, keeping every offset >= ``keep_from`` (the high
        watermark in a cluster); return the segments deleted.

        Thread-safe beside the loop's appends and fetches (``PartitionLog`` takes segments out
        under its lock and deletes them after); touches nothing of this manager but ``log``.
        """
        deleted = 0
        try:
            for segment in plog.delete_old_segments(keep_from):
                deleted += 1
                log.info("%s-%d: deleted segment %d-%d by %s", *key, segment.base_offset,
                         segment.next_offset, segment.reason)
        except LogClosedError:
            pass  # the topic was deleted meanwhile
        except Exception:
            log.exception("retention on %s-%d failed", *key)
        return deleted

    def checkpoint(self, key: tuple[str, int], plog: PartitionLog) -> None:
        """Write one log's recovery point (so a crash re-reads less on the next start)."""
        try:
            plog.checkpoint()
        except Exception:
            log.exception("checkpoint of %s-%d failed", *key)


_LOG_KEYS = frozenset(LogConfig().to_mapping())
