"""Partition reassignments for operators (Kafka's Admin ``alterPartitionReassignments`` and
``listPartitionReassignments``).

Why a module of its own: ``AsyncAdmin`` delegates here as it does to ``GroupAdmin``. A
change goes to the controller (any broker takes it: it is a compare-and-swap in etcd). The
list is asked of every live broker: each names every reassignment under way, and the one
that leads a partition adds how far its new replicas have fetched, so the answers are
merged, the leader's preferred. A broker that cannot be reached is skipped (any one knows
the whole list from etcd; only progress may be missing then).
"""

from __future__ import annotations

from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._types import PartitionReassignment, TopicPartition
from .errors import TslogError, error_for


def _grouped(items) -> list[dict]:
    topics: dict[str, list] = {}
    for tp, value in items:
        topics.setdefault(tp.topic, []).append(value)
    return [{"topic": topic, "partitions": values} for topic, values in topics.items()]


def _reassignment(entry: dict) -> PartitionReassignment:
    return PartitionReassignment(
        entry["replicas"], entry["adding_replicas"], entry["removing_replicas"],
        entry["leader"], entry["isr"], entry["log_end_offset"],
        {r["broker"]: r["log_end_offset"] for r in entry["replica_log_end_offsets"]})


class ReassignAdmin:
    def __init__(self, cluster: Cluster, timeout_ms: int) -> None:
        self._cluster = cluster
        self._timeout_ms = timeout_ms

    async def alter(self, controller: int | None, reassignments: dict) -> None:
        """{TopicPartition: [broker ids] | None}; None cancels. Every partition is tried;
        then the first refusal is raised (e.g. ReassignmentInProgressError)."""
        body = await self._cluster.request(controller, ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
            "timeout_ms": self._timeout_ms,
            "topics": _grouped((tp, {"partition": tp.partition,
                                     "replicas": None if replicas is None else list(replicas)})
                               for tp, replicas in reassignments.items())})
        for topic in body["topics"]:
            for result in topic["partitions"]:
                if result["error_code"]:
                    raise error_for(result["error_code"])(
                        f"reassign {topic['topic']}-{result['partition']}: "
                        f"{result['error_message']}")

    async def list(self, partitions=None) -> dict:
        """{TopicPartition: PartitionReassignment} of the reassignments under way."""
        await self._cluster.refresh_metadata()
        wanted = None if partitions is None else _grouped((tp, tp.partition)
                                                          for tp in partitions)
        merged: dict[TopicPartition, PartitionReassignment] = {}
        answered, failure = 0, None
        for node_id in sorted(self._cluster.brokers):
            try:
                body = await self._cluster.request(
                    node_id, ApiKey.LIST_PARTITION_REASSIGNMENTS,
                    {"timeout_ms": self._timeout_ms, "topics": wanted})
            except TslogError as exc:  # a broker going away: the others know the list
                if not exc.retriable:
                    raise
                failure = exc
                continue
            answered += 1
            for topic in body["topics"]:
                for entry in topic["partitions"]:
                    tp = TopicPartition(topic["topic"], entry["partition"])
                    if tp not in merged or entry["log_end_offset"] >= 0:
                        merged[tp] = _reassignment(entry)
        if not answered and failure is not None:
            raise failure
        return dict(sorted(merged.items()))

    async def elect_preferred(self, controller: int | None, partitions=None) -> dict:
        """{TopicPartition: None (elected) or the TslogError that says why not}."""
        body = await self._cluster.request(controller, ApiKey.ELECT_LEADERS, {
            "timeout_ms": self._timeout_ms,
            "topics": None if partitions is None else _grouped((tp, tp.partition)
                                                               for tp in partitions)})
        await self._cluster.refresh_metadata()
        return {TopicPartition(topic["topic"], r["partition"]):
                error_for(r["error_code"])(r["error_message"]) if r["error_code"] else None
                for topic in body["topics"] for r in topic["partitions"]}
