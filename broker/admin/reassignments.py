"""AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders (preferred), on
typed requests (``partition_requests.py``), for both front doors through ``PartitionAdmin``.

Why its own object: the work is the cluster's (``cluster/reassign_store.py`` writes etcd, the
controller completes the moves), but progress is the leader's to tell (how far each added
replica has fetched), and only the replica manager knows that. This joins the two, and
answers a single broker too: it holds every partition's one replica, so reassigning a
partition to itself is a no-op and any other set names brokers that do not exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tslog.protocol.errors import ErrorCode

from ..cluster.errors import EtcdError
from ..cluster.reassignment import (
    ReassignmentError,
    adding_replicas,
    removing_replicas,
)
from ..cluster.view import ClusterView, PartitionState
from ..replication.manager import ReplicaManager
from ..replication.partition import LEADER
from .partition_requests import Election, Move, Outcome, Reassignment

if TYPE_CHECKING:  # the etcd store loads only in a cluster (cluster_sync attaches it)
    from ..cluster.reassign_store import EtcdReassignments

_UNREACHABLE = "the cluster's metadata store (etcd) is unreachable"


class ReassignmentService:
    def __init__(self, cluster: ClusterView, replicas: ReplicaManager) -> None:
        self.cluster = cluster
        self.replicas = replicas
        self.store: EtcdReassignments | None = None  # set by cluster_sync when clustered

    async def alter(self, moves: list[Move], known: set[str]) -> list[Outcome]:
        """Per partition, in order: start (``replicas``) or cancel (None) a reassignment.
        ``known``: the topics that exist (a single broker's answer for an unknown one)."""
        return [await self._alter_one(move, known) for move in moves]

    async def _alter_one(self, move: Move, known: set[str]) -> Outcome:
        topic, partition, target = move
        try:
            if self.store is not None:
                await self.store.alter(topic, partition, target)
            else:
                self._alter_alone(topic, partition, target, known)
        except ReassignmentError as exc:
            return Outcome(exc.error_code, str(exc))
        except EtcdError:
            return Outcome(ErrorCode.REQUEST_TIMED_OUT, _UNREACHABLE)
        return Outcome(ErrorCode.NONE, None)

    def _alter_alone(self, topic: str, partition: int, target: tuple[int, ...] | None,
                     known: set[str]) -> None:
        if topic not in known or self.replicas.get(topic, partition) is None:
            raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"no partition {topic}-{partition}")
        if target is None:
            raise ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                                    f"no reassignment of {topic}-{partition} runs")
        if target != (self.cluster.node_id,):
            raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                    f"a single broker (node {self.cluster.node_id}) can only "
                                    f"hold a partition itself, not on {list(target)}")

    async def elect(self, named: list[tuple[str, int]] | None,
                    known: set[str]) -> list[Election]:
        """ElectLeaders (preferred): per partition named, or every one whose preferred
        replica does not lead when ``named`` is None."""
        if named is None:
            named = self._not_preferred()
        results = []
        for topic, partition in named:
            try:
                if self.store is not None:
                    await self.store.elect_preferred(topic, partition)
                else:
                    self._elect_alone(topic, partition, known)
                code, message = ErrorCode.NONE, None
            except ReassignmentError as exc:
                code, message = exc.error_code, str(exc)
            except EtcdError:
                code, message = ErrorCode.REQUEST_TIMED_OUT, _UNREACHABLE
            results.append(Election(topic, partition, code, message))
        return results

    def _not_preferred(self) -> list[tuple[str, int]]:
        return [] if self.store is None else self.store.not_preferred()

    def _elect_alone(self, topic: str, partition: int, known: set[str]) -> None:
        if topic not in known or self.replicas.get(topic, partition) is None:
            raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"no partition {topic}-{partition}")
        raise ReassignmentError(ErrorCode.ELECTION_NOT_NEEDED,
                                "a single broker leads every partition already")

    def listed(self, named: list[tuple[str, int]] | None) -> list[Reassignment]:
        """Every reassignment under way (of the partitions named, if any), with progress
        where this broker leads the partition."""
        states = [] if self.store is None else self.store.under_way()
        if named is not None:
            wanted = set(named)
            states = [s for s in states if (s.topic, s.partition) in wanted]
        return [self._entry(state) for state in states]

    def _entry(self, state: PartitionState) -> Reassignment:
        adding = adding_replicas(state)
        log_end, behind = -1, [(broker, -1) for broker in adding]
        part = self.replicas.partitions.get((state.topic, state.partition))
        if part is not None and part.role == LEADER:
            log_end = part.log.log_end_offset
            behind = [(broker, part.follower_leo.get(broker, -1)) for broker in adding]
        return Reassignment(state.topic, state.partition, list(state.replicas), list(adding),
                            list(removing_replicas(state)), state.leader, list(state.isr),
                            log_end, behind)
