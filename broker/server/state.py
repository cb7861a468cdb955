"""The broker state every handler works on, and the clock the logs share.

``Broker`` bundles what a request may touch: topics and their logs, committed group offsets,
the group committer (durable acks), the append notifier (long-poll fetches) and the clock.
Handlers get it as their first argument, so a test builds one over a temporary directory and
calls handlers directly, with no sockets and no event loop unless the handler awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Iterator

from ..cluster.view import ClusterView, LocalClusterView
from ..config import BrokerConfig, parse_host_port
from ..group_offsets import GroupOffsetStore
from ..metadata import LocalMetadataStore, MetadataStore
from ..replication.manager import ReplicaManager
from ..topics import TopicManager
from .durability import AppendNotifier, GroupCommitter
from .idle_poll import IdlePoller


class BrokerClock:
    """Wall clock plus the test-only offset, which can be frozen for one produce request.

    Why freeze: docs/protocol.md promises that every batch of one partition in one Produce
    request gets the same LogAppendTime. Appends run synchronously on the event loop, so
    holding the time still for the duration of one partition's appends is race-free.
    """

    def __init__(self, offset_ms: int = 0) -> None:
        self.offset_ms = offset_ms
        self._frozen_ms: int | None = None

    def now_ms(self) -> int:
        if self._frozen_ms is not None:
            return self._frozen_ms
        return time.time_ns() // 1_000_000 + self.offset_ms

    @contextlib.contextmanager
    def frozen(self) -> Iterator[int]:
        if self._frozen_ms is not None:  # nested: keep the outer instant
            yield self._frozen_ms
            return
        self._frozen_ms = self.now_ms()
        try:
            yield self._frozen_ms
        finally:
            self._frozen_ms = None


class Broker:
    """Everything the handlers need. Build with ``Broker.open`` (slow: run it in a thread)."""

    def __init__(self, config: BrokerConfig, topics: TopicManager, groups: GroupOffsetStore,
                 clock: BrokerClock, cluster: ClusterView | None = None) -> None:
        self.config = config
        self.topics = topics
        self.groups = groups
        self.clock = clock
        self.committer = GroupCommitter()
        self.notifier = AppendNotifier()
        self.idle_poller = IdlePoller(config.idle_poll_us)
        self.group_locks: dict[str, asyncio.Lock] = {}  # serializes each group's commits
        self.admin_lock = asyncio.Lock()  # one topic create/delete/alter at a time (single node)
        self.stopping = False  # set at shutdown: long polls answer at once
        self.closing = False  # set on the loop before the logs close: scrapes stop reading them
        host, port = parse_host_port(config.advertised_listen or config.listen)
        self.advertised_host = host
        self.advertised_port = port
        # Who leads what: LocalClusterView alone, EtcdClusterView in a cluster. The data path
        # (replication) reads partition states and proposes ISR changes through it.
        self.cluster: ClusterView = cluster or LocalClusterView(config.node_id, (host, port))
        # Topic changes go through etcd when clustered (EtcdMetadataStore); None alone.
        self.cluster_store = topics.store if config.clustered else None
        self.replicas = ReplicaManager(self, self.cluster)

    @classmethod
    def open(cls, config: BrokerConfig, store: MetadataStore | None = None,
             cluster: ClusterView | None = None, initial: tuple | None = None) -> "Broker":
        """Open the data directory: metadata, every partition log (recovering it if the last
        stop was not clean) and group offsets.

        A clustered broker (``cluster_sync.open_clustered``) passes its view, the etcd store
        and ``initial`` = (the cluster's topics, the partitions this broker hosts)."""
        data_dir = Path(config.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        clock = BrokerClock(config.test_clock_offset_ms)
        topics = TopicManager(config, store or LocalMetadataStore(data_dir), clock)
        topics.open_all(*(initial or ()))
        broker = cls(config, topics, GroupOffsetStore(data_dir), clock, cluster)
        broker.replicas.open_all()
        return broker

    def set_bound_port(self, port: int) -> None:
        """Advertise the port actually bound (``listen`` may say port 0)."""
        if self.config.advertised_listen is None:
            self.advertised_port = port
            if isinstance(self.cluster, LocalClusterView):
                self.cluster.address = (self.advertised_host, port)

    def close(self) -> None:
        """Finish the group commit's rounds and stop its thread; checkpoint replication
        state, flush and close every log (clean-shutdown markers)."""
        self.committer.shutdown()
        self.replicas.checkpoint_all()
        self.topics.close_all()
