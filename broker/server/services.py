"""What each group of request handlers is given: narrow services, chosen once at start.

Why: a handler that is handed the whole broker can reach anything, so nothing says what it
depends on, and a test or a second front door (Kafka's protocol) must build all of it. Each
handler module names here the few services it uses, as a ``Protocol``, and each protocol has
a concrete, frozen holder of exactly those attributes (``DataPathServices`` and so on). The
broker (``state.Broker``, the one place that builds and wires the services when it opens)
fills one holder per group and binds every handler to its group's holder
(``dispatch.bind_handlers``); the connection only ever sees those bound handlers. A test may
hand a handler anything that has the protocol's attributes.

The one value that changes while the broker runs, "we are stopping", lives in a shared
``Lifecycle`` the holders point to, so a frozen holder still sees the shutdown.

- ``DataPath`` (what the data service reads for produce, fetch, list offsets): the hosted
  partitions with their replication state, the topic catalog (to tell "not here" from "no
  such partition"), the clock, the notifier that wakes long polls, group commit (durable
  acks), the request limits, and the broker's ``Lifecycle`` (its ``stopping`` flag ends long
  polls).
- ``AdminApis`` (ApiVersions): the topic catalog, the cluster view and the broker's
  settings. The partition admin APIs have their typed service,
  ``admin/partitions.PartitionAdmin``, and the topic and config APIs theirs,
  ``admin/topics.TopicAdmin``, as the data APIs are bound to the data service
  (``broker/data``).
- The group APIs are the group service's (``groups/api.py``, ``GroupApi``), as the data
  APIs are the data service's: their handlers are bound to it.
- ``AclApis`` (Describe/Create/DeleteAcls): the ACL service (its store and authorizer).
- ``SecurityApis`` (Describe/AlterUserScramCredentials): the authenticator, whose store
  holds the SCRAM credentials (the login itself is the connection's, not a handler's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..cluster.view import ClusterView
from ..config import BrokerConfig
from ..replication.manager import ReplicaManager
from ..security.acl_store import AclService
from ..security.scram import Authenticator
from ..topics import TopicManager
from .clock import BrokerClock
from .durability import AppendNotifier, GroupCommitter


class Lifecycle:
    """The broker's run state, shared by reference: set once each, on the event loop.

    ``stopping``: the broker is shutting down; long polls answer at once. ``closing``: the
    logs are about to close; a metrics scrape still under way stops reading them."""

    __slots__ = ("stopping", "closing")

    def __init__(self) -> None:
        self.stopping = False
        self.closing = False


class DataPath(Protocol):
    topics: TopicManager
    replicas: ReplicaManager
    clock: BrokerClock
    notifier: AppendNotifier
    committer: GroupCommitter
    config: BrokerConfig  # fetch_max_bytes, request_timeout_ms
    lifecycle: Lifecycle  # .stopping, set at shutdown: long polls answer at once


class AdminApis(Protocol):
    topics: TopicManager
    cluster: ClusterView
    config: BrokerConfig  # node_id


class AclApis(Protocol):
    acls: AclService


class SecurityApis(Protocol):
    authenticator: Authenticator  # its .store: the SCRAM credentials


# The concrete holders the broker builds, one per protocol above, with exactly its attributes
# (tests/unit/broker/test_services.py checks they match). Frozen: chosen once at start.


@dataclass(frozen=True, slots=True)
class DataPathServices:
    topics: TopicManager
    replicas: ReplicaManager
    clock: BrokerClock
    notifier: AppendNotifier
    committer: GroupCommitter
    config: BrokerConfig
    lifecycle: Lifecycle


@dataclass(frozen=True, slots=True)
class AdminServices:
    topics: TopicManager
    cluster: ClusterView
    config: BrokerConfig


@dataclass(frozen=True, slots=True)
class AclServices:
    acls: AclService


@dataclass(frozen=True, slots=True)
class SecurityServices:
    authenticator: Authenticator

