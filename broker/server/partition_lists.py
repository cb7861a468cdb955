"""Metadata's partition list of each topic, built once and kept until it changes.

Why: a Metadata request for every topic of a broker with ten thousand partitions built ten
thousand dicts, one partition state each, for an answer that changes only when a topic is
created, grown or deleted or a partition's leader or ISR moves. The list is kept per topic
with the ``TopicMetadata`` it was built from (the catalog replaces that object on every change
of the topic) and dropped when the cluster view reports a new state of one of its partitions
(``ClusterView.add_listener``, the hook replication uses for the same changes). A single
node's states never change, so its lists live until their topic changes.

The lists are shared by every response that carries them: responses are packed, never
changed, once a handler returns them.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from ..cluster.view import NO_LEADER, ClusterView, PartitionState
from ..metadata import TopicMetadata


def partition_metadata(cluster: ClusterView, topic: str, partition: int) -> dict:
    """One partition's entry in a Metadata response."""
    state = cluster.partition_state(topic, partition)
    if state is None:  # the topic's record arrived before this partition's state
        return {"partition": partition, "error_code": ErrorCode.LEADER_NOT_AVAILABLE,
                "leader": NO_LEADER, "leader_epoch": -1, "replicas": [], "isr": []}
    return {"partition": partition,
            "error_code": ErrorCode.LEADER_NOT_AVAILABLE if state.leader == NO_LEADER else 0,
            "leader": state.leader, "leader_epoch": state.leader_epoch,
            "replicas": list(state.replicas), "isr": list(state.isr)}


class PartitionLists:
    """The kept lists, by topic name. ``builds`` counts the lists built (tests count it)."""

    def __init__(self, cluster: ClusterView) -> None:
        self._cluster = cluster
        self._lists: dict[str, tuple[TopicMetadata, list[dict]]] = {}
        self.builds = 0
        cluster.add_listener(self._state_changed)

    def _state_changed(self, state: PartitionState) -> None:
        self._lists.pop(state.topic, None)

    def get(self, topic: TopicMetadata) -> list[dict]:
        """``topic``'s partition entries, built now if its kept list is not of this very
        ``TopicMetadata`` or a state of its partitions changed since."""
        kept = self._lists.get(topic.name)
        if kept is not None and kept[0] is topic:
            return kept[1]
        cluster, name = self._cluster, topic.name
        built = [partition_metadata(cluster, name, p) for p in range(topic.partitions)]
        self._lists[name] = (topic, built)
        self.builds += 1
        return built

    def keep_only(self, names) -> None:
        """Forget the lists of topics not in ``names`` (deleted ones), at a full listing."""
        if len(self._lists) > len(names):
            for name in [n for n in self._lists if n not in names]:
                del self._lists[name]
