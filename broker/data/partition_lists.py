"""Metadata's partition list of each topic, built once and kept until it changes.

Why: a Metadata request for every topic of a broker with ten thousand partitions built ten
thousand entries, one partition state each, for an answer that changes only when a topic is
created, grown or deleted or a partition's leader or ISR moves. The list is kept per topic
with the ``TopicMetadata`` it was built from (the catalog replaces that object on every change
of the topic) and dropped when the cluster view reports a new state of one of its partitions
(``ClusterView.add_listener``, the hook replication uses for the same changes). A single
node's states never change, so its lists live until their topic changes.

A kept list is typed (``PartitionLeader`` entries); each front door's adapter translates it
into its own wire shape once and keeps that beside it (``KeptPartitions.encoded``), so a
Metadata answer on either port sends kept lists, not new ones. The lists are shared by every
response that carries them: responses are packed, never changed, once a handler returns them.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from tslog.protocol.errors import ErrorCode

from ..cluster.view import NO_LEADER, ClusterView, PartitionState
from ..metadata import TopicMetadata
from .requests import make

_LEADER_NOT_AVAILABLE = int(ErrorCode.LEADER_NOT_AVAILABLE)


class PartitionLeader(NamedTuple):
    """One partition in a Metadata answer."""

    partition: int
    error_code: int  # LEADER_NOT_AVAILABLE while it has no leader
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


def partition_leaders(cluster: ClusterView, topic: str, count: int) -> list[PartitionLeader]:
    """The entries of ``topic``'s ``count`` partitions, from the cluster's latest states.

    One call to the view for the whole topic (``ClusterView.partition_leaders``), entries
    made without their Python-level constructor (``make``), and one ``replicas``/``isr``
    list per distinct tuple of node ids, shared by the entries that have it (answers are
    never changed, see above): building a topic's list is what the first Metadata after a
    start, a new topic or a leader change pays per partition."""
    lists: dict[tuple, list[int]] = {}
    entries = []
    for partition, leaders in enumerate(cluster.partition_leaders(topic, count)):
        if leaders is None:  # the topic's record arrived before this partition's state
            entries.append(make(PartitionLeader, (partition, _LEADER_NOT_AVAILABLE,
                                                  NO_LEADER, -1, [], [])))
            continue
        leader, epoch, replicas, isr = leaders
        replicas = lists.get(replicas) or lists.setdefault(replicas, list(replicas))
        isr = lists.get(isr) or lists.setdefault(isr, list(isr))
        entries.append(make(PartitionLeader, (
            partition, _LEADER_NOT_AVAILABLE if leader == NO_LEADER else 0, leader, epoch,
            replicas, isr)))
    return entries


class KeptPartitions:
    """A topic's kept list (``entries``) and its translations, one per front door."""

    __slots__ = ("entries", "_encoded")

    def __init__(self, entries: list[PartitionLeader]) -> None:
        self.entries = entries
        self._encoded: dict[Callable, object] = {}

    def encoded(self, encode: Callable[[list[PartitionLeader]], object]):
        """``encode(entries)``, made once per ``encode`` (an adapter's translation) for as
        long as this list is kept."""
        done = self._encoded.get(encode)
        if done is None:
            done = self._encoded[encode] = encode(self.entries)
        return done


class PartitionLists:
    """The kept lists, by topic name. ``builds`` counts the lists built (tests count it)."""

    def __init__(self, cluster: ClusterView) -> None:
        self._cluster = cluster
        self._lists: dict[str, tuple[TopicMetadata, KeptPartitions]] = {}
        self.builds = 0
        cluster.add_listener(self._state_changed)

    def _state_changed(self, state: PartitionState) -> None:
        self._lists.pop(state.topic, None)

    def get(self, topic: TopicMetadata) -> KeptPartitions:
        """``topic``'s partitions, built now if its kept list is not of this very
        ``TopicMetadata`` or a state of its partitions changed since."""
        kept = self._lists.get(topic.name)
        if kept is not None and kept[0] is topic:
            return kept[1]
        cluster, name = self._cluster, topic.name
        built = KeptPartitions(partition_leaders(cluster, name, topic.partitions))
        self._lists[name] = (topic, built)
        self.builds += 1
        return built

    def keep_only(self, names) -> None:
        """Forget the lists of topics not in ``names`` (deleted ones), at a full listing."""
        if len(self._lists) > len(names):
            for name in [n for n in self._lists if n not in names]:
                del self._lists[name]
