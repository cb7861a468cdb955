"""A clustered broker's start-up and the link from etcd's topic changes to its local logs.

``open_clustered`` joins the cluster (``EtcdClusterView.start``), opens the logs of the
partitions this broker holds a replica of (in a thread: recovery is slow) from a snapshot
of the cluster taken on the loop, then reconciles once more on the loop and from then on
after every change its watch applies. It also makes the broker the consumer groups'
coordinator for as long as it is the controller (``follow_controller``). Reconciling compares desired state (every topic in
etcd, and the partitions whose replicas include us) with the local one, so the order in
which the watch reports topic and partition keys never matters.

Why a local ``__meta/cluster-topics.json`` (topic name -> topic id): a topic deleted and
re-created under the same name while this broker was down must not be served from the old
incarnation's files. At start-up, the directories of a topic recorded here whose id changed,
or that the cluster no longer has, are deleted; directories this broker never recorded are
left alone (a wrong ``cluster_name`` must not wipe a data directory).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
from pathlib import Path
from typing import Callable

from ..security.etcd_acls import EtcdAclStore
from ..cluster.etcd_view import EtcdClusterView
from ..cluster.reassign_store import EtcdReassignments
from ..cluster.records import Changes, TopicRecord
from ..metadata.etcd_store import EtcdMetadataStore
from ..config import BrokerConfig, parse_host_port
from ..groups.offset_etcd import EtcdGroupOffsetStore
from ..groups.service import GroupService
from ..groups.state_etcd import EtcdGroupStateStore
from ..metadata import META_DIR
from ..metrics.definitions import forget_topic
from ..security.etcd_credentials import EtcdCredentialStore
from ..storage.files import remove_retired, write_atomically
from ..topics import TopicManager
from .state import Broker

log = logging.getLogger("tslog.broker.cluster")

IDS_FILE = "cluster-topics.json"


async def open_clustered(config: BrokerConfig) -> tuple[Broker, EtcdClusterView]:
    """Join the cluster and open this broker's logs. Raises ClusterError (cluster.errors)."""
    address = parse_host_port(config.advertised_listen or config.listen)
    view = await EtcdClusterView.start(config, address)
    try:
        records = dict(view.cache.topics)
        hosted = hosted_partitions(view, records)
        sync = TopicSync(Path(config.data_dir), view)
        store = EtcdMetadataStore(view, config.request_timeout_ms / 1000)
        broker = await asyncio.to_thread(sync.open_broker, config, store, records, hosted)
    except BaseException:
        await view.close()
        raise
    try:  # committed group offsets live in etcd, so a controller failover keeps them
        groups = EtcdGroupOffsetStore(view.etcd, config.cluster_name)
        await groups.start()
    except BaseException:
        await asyncio.to_thread(broker.close)
        await view.close()
        raise
    try:  # ACLs too: every broker follows them, so one added anywhere applies everywhere
        acls = EtcdAclStore(view.etcd, config.cluster_name, broker.acls.authorizer)
        await acls.start()
    except BaseException:
        await groups.close()
        await asyncio.to_thread(broker.close)
        await view.close()
        raise
    broker.acls.store = acls  # closed by the listener before the view
    broker.use_group_store(groups)
    try:  # SCRAM users: every broker follows the cluster's, so a login works anywhere
        credentials = EtcdCredentialStore(view.etcd, view.keys.prefix)
        await credentials.start()
    except BaseException:
        await asyncio.to_thread(broker.close)
        await view.close()
        raise
    broker.use_credential_store(credentials)
    broker.reassignments.store = EtcdReassignments(view, config.request_timeout_ms / 1000)
    view.group_store = groups  # closed with the view
    sync.attach(broker.topics, broker.notifier.notify)
    sync.reconcile()  # whatever changed while the logs were opening
    view.add_change_listener(sync.on_changes)
    follow_controller(view, broker.groups)
    return broker, view


def follow_controller(view: EtcdClusterView, groups: GroupService) -> None:
    """Coordinate the consumer groups while this broker is the controller: from the etcd
    state of each controller epoch it holds (its writes fenced on that epoch), and not at all
    from the moment the watch shows another controller, or none."""
    held = 0

    def on_changes(_changes: Changes | None) -> None:
        nonlocal held
        cache = view.cache
        epoch = cache.controller_revision if cache.controller_id == view.node_id else 0
        if epoch != held:
            held = epoch
            groups.serve_with(EtcdGroupStateStore(view.etcd, view.keys, epoch) if epoch
                              else None)

    view.add_change_listener(on_changes)
    on_changes(None)  # we may have won the election while the logs were opening


def hosted_partitions(view: EtcdClusterView, records: dict[str, TopicRecord]
                      ) -> set[tuple[str, int]]:
    node = view.node_id
    return {tp for tp, state in view.cache.partitions.items()
            if tp[0] in records and node in state.replicas}


class TopicSync:
    def __init__(self, data_dir: Path, view: EtcdClusterView) -> None:
        self.data_dir = data_dir
        self.view = view
        self.path = data_dir / META_DIR / IDS_FILE
        self.ids: dict[str, str] = {}  # topics with local logs -> the topic id they belong to
        self.topics: TopicManager | None = None  # the broker's, once its logs are open
        self.notify: Callable[[object], None] = lambda _: None

    # -- start-up (a thread; nothing else touches the data directory yet) -------------------

    def open_broker(self, config: BrokerConfig, store: EtcdMetadataStore,
                    records: dict[str, TopicRecord], hosted: set[tuple[str, int]]) -> Broker:
        Path(config.data_dir).mkdir(parents=True, exist_ok=True)
        self.ids = self._load()
        for name, topic_id in sorted(self.ids.items()):
            record = records.get(name)
            if record is None or record.topic_id != topic_id:
                log.warning("removing local data of topic %s: deleted%s while this broker was "
                            "away", name, "" if record is None else " and re-created")
                self._remove_dirs(name)
        self._remove_moved_dirs(records)
        self.ids = {name: records[name].topic_id for name in {t for t, _ in hosted}}
        self._save()
        topics = {name: record.metadata for name, record in records.items()}
        return Broker.open(config, store, cluster=self.view, initial=(topics, hosted))

    def _remove_moved_dirs(self, records: dict[str, TopicRecord]) -> None:
        """Remove directories of recorded topics' partitions that were moved off this broker
        while it was away (their state no longer lists it)."""
        recorded = set(self.ids) & set(records)
        for entry in self.data_dir.iterdir():  # one pass, however many topics there are
            name, _, number = entry.name.rpartition("-")
            if name not in recorded or not number.isdigit() or not entry.is_dir():
                continue
            state = self.view.cache.partitions.get((name, int(number)))
            if state is not None and self.view.node_id not in state.replicas:
                log.info("removing %s: the partition moved off this broker", entry.name)
                shutil.rmtree(entry)

    @staticmethod
    def _remove_in_thread(directories: list[Path]) -> None:
        """Unlink a deleted topic's files off the loop (a gigabyte of segments keeps the disk busy)."""
        def remove() -> None:
            for directory in directories:
                try:
                    remove_retired(directory)
                except OSError as exc:  # tried again at the next start
                    log.error("cannot remove %s: %r", directory, exc)
        if directories:
            asyncio.get_running_loop().run_in_executor(None, remove)

    def _load(self) -> dict[str, str]:
        try:
            return dict(json.loads(self.path.read_text(encoding="utf-8"))["topics"])
        except FileNotFoundError:
            return {}

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, json.dumps({"version": 1, "topics": self.ids},
                                               indent=1, sort_keys=True).encode())

    def _drop_moved_replicas(self) -> None:
        """Delete the logs of partitions whose replicas no longer include this broker (a
        reassignment moved them away): they would only take disk space, and a replica
        added here again later starts from an empty log, as any new one."""
        topics, partitions = self.topics, self.view.cache.partitions
        for key in list(topics.logs):
            state = partitions.get(key)
            if state is None or self.view.node_id in state.replicas:
                continue
            removed, retired = topics.drop_local_logs(*key)
            for plog in removed:
                self.notify(plog)
            self._remove_in_thread(retired)
            log.info("%s-%d: replica moved off this broker; its log is deleted", *key)

    def _remove_dirs(self, name: str) -> None:
        pattern = re.compile(re.escape(name) + r"-\d+")
        for entry in self.data_dir.iterdir():
            if entry.is_dir() and pattern.fullmatch(entry.name):
                shutil.rmtree(entry)

    # -- running (on the loop) --------------------------------------------------------------

    def attach(self, topics: TopicManager, notify: Callable[[object], None]) -> None:
        """Reconcile into the opened broker's ``topics``; ``notify`` wakes the long polls
        on a log this removes (they answer UNKNOWN_TOPIC_OR_PARTITION at once)."""
        self.topics = topics
        self.notify = notify

    def on_changes(self, changes: Changes) -> None:
        if changes.topics_changed or changes.states:
            self.reconcile()

    def reconcile(self) -> None:
        """Make local topics and logs match the cluster's."""
        topics = self.topics
        records = self.view.cache.topics
        changed = False
        for name in list(topics.topics):
            record = records.get(name)
            if record is None or (name in self.ids and record.topic_id != self.ids[name]):
                removed, retired = topics.drop_local_logs(name)
                for plog in removed:
                    self.notify(plog)  # long polls answer UNKNOWN_TOPIC_OR_PARTITION
                self._remove_in_thread(retired)
                del topics.topics[name]
                changed |= self.ids.pop(name, None) is not None
                forget_topic(name)
                log.info("topic %s deleted", name)
        for name, record in records.items():
            topics.set_topic(record.metadata)
        self._drop_moved_replicas()
        for topic, partition in sorted(hosted_partitions(self.view, records) - set(topics.logs)):
            try:
                topics.open_new_partition(records[topic].metadata, partition)
            except OSError as exc:
                log.error("cannot create the log of %s-%d: %r", topic, partition, exc)
                continue
            if self.ids.get(topic) != records[topic].topic_id:
                self.ids[topic] = records[topic].topic_id
                changed = True
            log.info("%s-%d: replica created on this broker", topic, partition)
        if changed:
            try:
                self._save()
            except OSError as exc:
                log.error("cannot record the local topics in %s: %r", self.path, exc)

