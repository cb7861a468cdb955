"""What the data path may know and ask of the cluster, and the single-node answer to it.

Why a narrow interface: replication (follower fetchers, the high watermark, acks=all, ISR
changes) must not care whether partition state lives in etcd or is implied by being alone.
Everything it needs is here: the live brokers' addresses, each partition's state, a callback
on every change, ISR proposals that succeed only against the version they were computed from
(so a deposed leader can never shrink the ISR or acknowledge after losing its epoch), and
cluster-unique producer ids for the idempotent producer.

Callbacks run on the broker's event loop, in the order etcd applied the changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

NO_LEADER = -1


class StaleStateError(Exception):
    """A proposal was computed from a partition state that is no longer current."""


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # broker id, NO_LEADER while none is eligible
    leader_epoch: int  # bumped on every leader change; recorded in the log's epoch checkpoint
    isr: tuple[int, ...]  # in-sync replicas, leader included
    replicas: tuple[int, ...]  # assigned replicas, preferred leader first
    version: int  # the store's version of this record; proposals compare-and-swap on it
    # A reassignment under way (``cluster/reassignment.py``): the replica set asked for, and
    # the replicas added to ``replicas`` for it. Both empty when none is.
    target: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()


StateListener = Callable[[PartitionState], None]


Leaders = tuple  # (leader, leader_epoch, replicas, isr) of one partition


def leaders_of(states: dict, topic: str, count: int) -> list[Leaders | None]:
    """``ClusterView.partition_leaders`` from a dict of states by (topic, partition)."""
    get = states.get
    out = []
    for partition in range(count):
        state = get((topic, partition))
        out.append(None if state is None else (state.leader, state.leader_epoch, state.replicas,
                                               state.isr))
    return out


class ClusterView(Protocol):
    node_id: int

    def brokers(self) -> dict[int, tuple[str, int]]:
        """Live brokers' advertised (host, port), by id."""

    def kafka_brokers(self) -> dict[int, tuple[str, int]]:
        """Live brokers' Kafka listener (host, port), by id; brokers without one are absent."""

    def controller_id(self) -> int:
        """The broker currently acting as controller, or NO_LEADER."""

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        """The latest known state, or None for an unknown partition."""

    def partition_leaders(self, topic: str, count: int) -> list[Leaders | None]:
        """``Leaders`` of ``topic``'s partitions 0 to ``count`` - 1 (None where a partition
        has no state yet): what a Metadata answer lists, for a whole topic in one call."""

    def add_listener(self, listener: StateListener) -> None:
        """Call ``listener`` with every new or changed partition state from now on."""

    async def propose_isr(self, state: PartitionState, isr: tuple[int, ...]) -> PartitionState:
        """Replace ``state``'s ISR by ``isr`` if ``state.version`` is still current and this
        broker leads it in ``state.leader_epoch``; return the new state. Raise
        ``StaleStateError`` otherwise (the caller then acts on the newer state it will hear)."""

    async def allocate_producer_id(self) -> int:
        """A producer id no other broker of the cluster will ever hand out."""

    def may_acknowledge(self) -> bool:
        """False while this broker's leadership may be in doubt (its session may have
        expired): a leader then acknowledges no produce, acks=1 included."""

    def peer_unreachable(self, node_id: int, address: tuple[str, int]) -> None:
        """A connection to broker ``node_id`` at ``address`` was refused (evidence that its
        process died; the view confirms before acting)."""


class LocalClusterView:
    """A cluster of one: this broker leads every partition in epoch 0, ISR = itself."""

    def __init__(self, node_id: int, address: tuple[str, int]) -> None:
        self.node_id = node_id
        self.address = address
        self.kafka_address: tuple[str, int] | None = None  # set once the Kafka port is bound
        self._next_producer_id = 0

    def brokers(self) -> dict[int, tuple[str, int]]:
        return {self.node_id: self.address}

    def kafka_brokers(self) -> dict[int, tuple[str, int]]:
        return {} if self.kafka_address is None else {self.node_id: self.kafka_address}

    def controller_id(self) -> int:
        return self.node_id

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        me = (self.node_id,)
        return PartitionState(topic, partition, self.node_id, 0, me, me, 0)

    def partition_leaders(self, topic: str, count: int) -> list[Leaders]:
        """The same entry for every partition (one shared tuple), no state built for each."""
        me = (self.node_id,)
        return [(self.node_id, 0, me, me)] * count

    def add_listener(self, listener: StateListener) -> None:
        """States never change when alone, so there is nothing to report."""

    async def propose_isr(self, state: PartitionState, isr: tuple[int, ...]) -> PartitionState:
        raise StaleStateError("a single-node broker's ISR is always itself")

    def may_acknowledge(self) -> bool:
        """A single node has no session to lose."""
        return True

    def peer_unreachable(self, node_id: int, address: tuple[str, int]) -> None:
        """A single node has no peers."""

    def seed_producer_ids(self, used: int) -> None:
        """Never hand out ``used`` or below again (the largest id found in the logs)."""
        self._next_producer_id = max(self._next_producer_id, used)

    async def allocate_producer_id(self) -> int:
        """Unique within this broker's lifetime; the broker seeds it from the log on start."""
        self._next_producer_id += 1
        return self._next_producer_id


def kafka_address(config) -> tuple[str, int] | None:
    """The (host, port) this broker's Kafka listener is reached at, or None without one. A
    wildcard host (0.0.0.0, ::) is advertised as the native listener's advertised host."""
    if config.kafka_listen is None:
        return None
    from ..config import parse_host_port  # the config imports nothing of the cluster's
    host, port = parse_host_port(config.kafka_listen)
    if host in ("0.0.0.0", "::", ""):
        host = parse_host_port(config.advertised_listen or config.listen)[0]
    return host, port
