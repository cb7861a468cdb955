"""``Broker``: the one place that builds the broker's services and wires them together.

It opens the data directory (topics and their logs, committed group offsets), then makes
every choice that differs between a single broker and a cluster once, here: the cluster view
(``LocalClusterView`` alone, etcd's in a cluster), the topic service (``LocalTopicService``
writes to this disk, ``ClusterTopicService`` to etcd; the topic admin service, ``broker/admin``,
changes topics through it), where producer ids come from. After
that nothing asks again: handlers use the services they name in ``services.py``, and
replication gets the hosted logs, the view, the clock and the notifier, never the broker.

What leaves the broker is narrow, built here once: ``dispatch``, every ApiKey's handler
bound to its group's services (``services.DataPathServices`` and the others; the
connections get this table, not the broker), and ``scrape_sources``, what the metrics
endpoint reads. Both share ``lifecycle``, whose flags the shutdown sets. A test opens a
broker over a temporary directory and calls ``dispatch`` directly, with no sockets and no
event loop unless the handler awaits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tslog.protocol.sasl import ScramLogin

from ..admin.topics import TopicAdmin, TopicChanges
from ..cluster.view import ClusterView, LocalClusterView, kafka_address
from ..admin.partitions import PartitionAdmin
from ..admin.reassignments import ReassignmentService
from ..config import BrokerConfig, parse_host_port
from ..data.partition_lists import PartitionLists
from ..data.service import DataService
from ..groups.api import GroupApi
from ..groups.catalog import GroupCatalog
from ..groups.classic_service import ClassicGroupService
from ..groups.committed_offsets import CommittedOffsets, OffsetStore
from ..groups.offset_files import GroupOffsetStore
from ..groups.service import GroupService
from ..groups.state_files import GroupStateStore
from ..metadata import LocalMetadataStore, MetadataStore
from ..metrics.sources import ScrapeSources
from ..replication.manager import ReplicaManager
from ..security.acl import Authorizer, parse_super_users
from ..security.acl_store import AclService, LocalAclStore
from ..security.request_gate import RequestGate
from ..security.credentials import CredentialStore, LocalCredentialStore
from ..security.scram import Authenticator
from ..security.tls import peer_context
from ..topics import TopicManager
from .clock import BrokerClock
from .dispatch import Dispatch, bind_handlers
from .durability import AppendNotifier, GroupCommitter
from .idle_poll import IdlePoller
from .services import (
    AclServices,
    AdminServices,
    DataPathServices,
    Lifecycle,
    SecurityServices,
)
from .kafka.replication_rates import ReplicationRates
from .topic_service import ClusterTopicService, LocalTopicService

__all__ = ["Broker", "BrokerClock"]


def inter_broker_login(config: BrokerConfig) -> Callable[[], ScramLogin] | None:
    """The followers' SCRAM login at their leaders when SASL is on: the broker's own user
    (``inter_broker_sasl_username``, its password read once from
    ``inter_broker_sasl_password_file``), with the strongest mechanism the brokers accept."""
    mechanisms = config.sasl_mechanism_list
    if not mechanisms or config.inter_broker_sasl_username is None:
        return None  # (with a username, the password file is required: config.py checks)
    password = Path(config.inter_broker_sasl_password_file).read_text().rstrip("\r\n")
    mechanism = "SCRAM-SHA-512" if "SCRAM-SHA-512" in mechanisms else mechanisms[0]
    username = config.inter_broker_sasl_username
    return lambda: ScramLogin(mechanism, username, password)


class Broker:
    """The services, built and wired once. Build with ``Broker.open`` (slow: run it in a
    thread).

    Args:
        cluster: the view of a clustered broker (or a test's); None builds the single node's
            ``LocalClusterView``, which is the only one told the port bound at start.
    """

    def __init__(self, config: BrokerConfig, topics: TopicManager, groups: OffsetStore,
                 clock: BrokerClock, cluster: ClusterView | None = None) -> None:
        self.config = config
        self.topics = topics
        self.clock = clock
        self.committer = GroupCommitter()
        self.notifier = AppendNotifier()
        self.idle_poller = IdlePoller(config.idle_poll_us)
        self.offsets = CommittedOffsets(groups)
        # .stopping at shutdown: long polls answer at once; .closing before the logs close:
        # scrapes stop reading them.
        self.lifecycle = Lifecycle()
        host, port = parse_host_port(config.advertised_listen or config.listen)
        self.advertised_host = host
        self.advertised_port = port
        # Who leads what: LocalClusterView alone, EtcdClusterView in a cluster. The data path
        # (replication) reads partition states and proposes ISR changes through it.
        self._local_view = None if cluster is not None else LocalClusterView(config.node_id,
                                                                              (host, port))
        self.cluster: ClusterView = cluster or self._local_view
        # Topic changes: etcd's store when clustered (EtcdMetadataStore), this disk alone.
        self.topic_service: TopicChanges = (
            ClusterTopicService(topics, topics.store, self.offsets) if config.clustered
            else LocalTopicService(topics, self.notifier.notify, self.offsets))
        # Consumer groups: a single node coordinates them from its data directory; in a
        # cluster the controller does, from etcd (cluster_sync.follow_controller).
        self.groups = GroupService(None if config.clustered else GroupStateStore(
            Path(config.data_dir)), topics, clock, config.coordinator_config)
        # Kafka's classic groups (the Kafka listener's JoinGroup/SyncGroup): in memory, their
        # offsets in ``offsets``; a group id is a classic group or a tslog one, never both.
        self.classic_groups = ClassicGroupService(clock, self._native_group_busy)
        self.groups.classic_busy = self.classic_groups.has_members
        # The one view of a group, whichever protocol its members speak, that ListGroups and
        # the describe APIs of both ports read.
        self.group_catalog = GroupCatalog(self.groups, self.classic_groups, self.offsets)
        # The group APIs of both front doors (``broker/groups/api.py``).
        self.group_api = GroupApi(self.groups, self.classic_groups, self.offsets,
                                  self.group_catalog, self.cluster, topics)
        # Metadata's partition list per topic, kept until the topic or a state changes.
        self.partition_lists = PartitionLists(self.cluster)
        self.replicas = ReplicaManager(
            topics, self.cluster, now_ms=clock.now_ms, notify=self.notifier.notify,
            fetch_wait_max_ms=config.replica_fetch_wait_max_ms, clustered=cluster is not None,
            login=inter_broker_login(config), peer_ssl=peer_context(config),
            throttle_rate_bytes_s=config.leader_replication_throttled_rate)
        # Partition reassignments: etcd's store when clustered (cluster_sync attaches it).
        self.reassignments = ReassignmentService(self.cluster, self.replicas)
        # The broker's run-time replication rates (the Kafka port's IncrementalAlterConfigs).
        self.rates = ReplicationRates(self.replicas.throttle,
                                      config.leader_replication_throttled_rate)
        # Topic and config changes for both front doors (``broker/admin``).
        self.topic_admin = TopicAdmin(self.topic_service, topics, config.node_id, self.rates)
        self._open_security(config)
        data_path = DataPathServices(topics, self.replicas, clock, self.notifier,
                                     self.committer, config, self.lifecycle)
        # Produce, fetch and list offsets for both front doors (``broker/data``).
        self.data = DataService(data_path, self.partition_lists, self.cluster)
        # DeleteRecords, InitProducerId, OffsetForLeaderEpoch, reassignments, elections,
        # OffsetsAtTimes and DescribeLogDirs for both front doors (``broker/admin``).
        self.partition_admin = PartitionAdmin(topics, self.replicas, self.cluster,
                                              self.reassignments, config.data_dir)
        self.dispatch: Dispatch = bind_handlers(
            self.data, self.partition_admin,
            AdminServices(topics, self.cluster, config),
            self.group_api, AclServices(self.acls), SecurityServices(self.authenticator),
            self.topic_admin)
        self.scrape_sources = ScrapeSources(topics, self.replicas, self.cluster, self.offsets,
                                            self.lifecycle, config.data_dir, self.groups,
                                            clock.now_ms)

    def _open_security(self, config: BrokerConfig) -> None:
        """The ACLs, the request gate and the SCRAM authenticator."""
        # ACLs: in memory, from the data directory's file (a cluster's come from etcd,
        # ``cluster_sync.open_clustered``). ``gate`` is None when the authorizer is off:
        # connections then call the handlers directly and pay nothing for it.
        authorizer = Authorizer(parse_super_users(config.super_users),
                                config.allow_everyone_if_no_acl_found)
        self.acls = AclService(authorizer, None if config.clustered
                               else LocalAclStore(Path(config.data_dir), authorizer))
        self.gate = RequestGate(authorizer) if config.authorizer_enabled else None
        # SCRAM logins and users: the data directory's credentials on a single node; a
        # cluster's come from etcd (``use_credential_store``, before it serves).
        self.authenticator = Authenticator(
            config.sasl_mechanism_list,
            None if config.clustered else LocalCredentialStore(Path(config.data_dir)),
            config.sasl_authentication_timeout_ms,
            max_receive_bytes=config.sasl_server_max_receive_size,
            failed_delay_ms=config.connection_failed_authentication_delay_ms)
        if config.sasl_mechanism_list and not config.clustered:
            self.authenticator.store.load_decoy_secret()

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
        if broker._local_view is not None:  # a cluster allocates producer ids in its store
            broker._local_view.seed_producer_ids(broker.replicas.largest_producer_id())
        return broker

    def _native_group_busy(self, group_id: str) -> bool:
        coordinator = self.groups.coordinator
        return coordinator is not None and bool(coordinator.describe(group_id).members)

    def use_group_store(self, store: OffsetStore) -> None:
        """Keep committed offsets in ``store`` from now on (a clustered broker's etcd store,
        started once the logs are open); call it before the broker serves."""
        self.offsets.store = store

    def use_credential_store(self, store: CredentialStore) -> None:
        """Check logins and keep users in ``store`` (a cluster's, in etcd) from now on."""
        self.authenticator.store = store

    def set_bound_port(self, port: int) -> None:
        """Advertise the port actually bound (``listen`` may say port 0)."""
        if self.config.advertised_listen is None:
            self.advertised_port = port
            if self._local_view is not None:
                self._local_view.address = (self.advertised_host, port)

    def set_kafka_port(self, port: int) -> None:
        """Advertise the Kafka listener's bound port in this broker's Metadata (a cluster's
        brokers publish theirs in etcd, from ``kafka_listen``, whose port is fixed)."""
        if self._local_view is not None:
            host = kafka_address(self.config)[0]
            self._local_view.kafka_address = (host, port)

    def close(self) -> None:
        """Finish the group commit's rounds and stop its thread; checkpoint replication
        state, flush and close every log (clean-shutdown markers)."""
        self.committer.shutdown()
        self.replicas.checkpoint_all()
        self.topics.close_all()
