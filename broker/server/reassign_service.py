"""AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders (preferred),
for both front doors.

Why a service: the work is the cluster's (``cluster/reassign_store.py`` writes etcd, the
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

if TYPE_CHECKING:  # the etcd store loads only in a cluster (cluster_sync attaches it)
    from ..cluster.reassign_store import EtcdReassignments


class ReassignmentService:
    def __init__(self, cluster: ClusterView, replicas: ReplicaManager) -> None:
        self.cluster = cluster
        self.replicas = replicas
        self.store: EtcdReassignments | None = None  # set by cluster_sync when clustered

    async def alter(self, topics: list[dict], known: set[str]) -> list[dict]:
        """Per partition: start (``replicas``) or cancel (null) a reassignment. ``known``:
        the topics that exist (a single broker's answer for an unknown one)."""
        results = []
        for entry in topics:
            answers = []
            for item in entry["partitions"]:
                code, message = await self._alter_one(entry["topic"], item["partition"],
                                                      item["replicas"], known)
                answers.append({"partition": item["partition"], "error_code": code,
                                "error_message": message})
            results.append({"topic": entry["topic"], "partitions": answers})
        return results

    async def _alter_one(self, topic: str, partition: int, replicas: list[int] | None,
                         known: set[str]) -> tuple[int, str | None]:
        target = None if replicas is None else tuple(replicas)
        try:
            if self.store is not None:
                await self.store.alter(topic, partition, target)
            else:
                self._alter_alone(topic, partition, target, known)
        except ReassignmentError as exc:
            return exc.error_code, str(exc)
        except EtcdError:
            return (ErrorCode.REQUEST_TIMED_OUT,
                    "the cluster's metadata store (etcd) is unreachable")
        return ErrorCode.NONE, None

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

    async def elect(self, topics: list[dict] | None, known: set[str]) -> list[dict]:
        """ElectLeaders (preferred): per partition named, or every one whose preferred
        replica does not lead when ``topics`` is None."""
        if topics is None:
            named = self._not_preferred()
        else:
            named = [(t["topic"], p) for t in topics for p in t["partitions"]]
        grouped: dict[str, list[dict]] = {}
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
                code, message = (ErrorCode.REQUEST_TIMED_OUT,
                                 "the cluster's metadata store (etcd) is unreachable")
            grouped.setdefault(topic, []).append({"partition": partition, "error_code": code,
                                                  "error_message": message})
        return [{"topic": topic, "partitions": items} for topic, items in grouped.items()]

    def _not_preferred(self) -> list[tuple[str, int]]:
        return [] if self.store is None else self.store.not_preferred()

    def _elect_alone(self, topic: str, partition: int, known: set[str]) -> None:
        if topic not in known or self.replicas.get(topic, partition) is None:
            raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"no partition {topic}-{partition}")
        raise ReassignmentError(ErrorCode.ELECTION_NOT_NEEDED,
                                "a single broker leads every partition already")

    def listed(self, topics: list[dict] | None) -> list[dict]:
        """Every reassignment under way (of the partitions named, if any), with progress
        where this broker leads the partition."""
        states = [] if self.store is None else self.store.under_way()
        if topics is not None:
            wanted = {(t["topic"], p) for t in topics for p in t["partitions"]}
            states = [s for s in states if (s.topic, s.partition) in wanted]
        grouped: dict[str, list[dict]] = {}
        for state in states:
            grouped.setdefault(state.topic, []).append(self._entry(state))
        return [{"topic": topic, "partitions": entries} for topic, entries in grouped.items()]

    def _entry(self, state: PartitionState) -> dict:
        adding = adding_replicas(state)
        log_end, behind = -1, [{"broker": b, "log_end_offset": -1} for b in adding]
        part = self.replicas.partitions.get((state.topic, state.partition))
        if part is not None and part.role == LEADER:
            log_end = part.log.log_end_offset
            behind = [{"broker": b, "log_end_offset": part.follower_leo.get(b, -1)}
                      for b in adding]
        return {"partition": state.partition, "replicas": list(state.replicas),
                "adding_replicas": list(adding),
                "removing_replicas": list(removing_replicas(state)),
                "leader": state.leader, "isr": list(state.isr), "log_end_offset": log_end,
                "replica_log_end_offsets": behind}
