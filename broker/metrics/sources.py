"""``ScrapeSources``: what a metrics scrape reads, handed over once when the endpoint starts.

Why not the broker: a scrape reads partition logs, high watermarks, who leads what, the
groups' committed offsets, the data directory and whether the logs are closing; given the
whole broker it could reach, and come to depend on, anything. The server builds these when
the broker opens (``server/state.py``); a test builds them from whatever it has.

Where a field's class lives in the server or in replication, which both import the metrics,
it is typed by the few attributes a scrape uses (the protocols below), so the metrics never
import back up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..cluster.view import ClusterView
from ..topics import TopicManager


class ReplicaStates(Protocol):
    """The replication state of hosted partitions (``replication.manager.ReplicaManager``):
    ``partitions[(topic, partition)]`` has ``log`` and ``high_watermark``."""

    partitions: dict


class GroupOffsets(Protocol):
    """Every group's committed offsets (``server.committed_offsets.CommittedOffsets``)."""

    def all_groups(self) -> dict[str, dict]: ...


class ClosingFlag(Protocol):
    """``closing`` turns true before the logs close (``server.services.Lifecycle``)."""

    closing: bool


@dataclass(frozen=True, slots=True)
class ScrapeSources:
    topics: TopicManager  # partition rows, index bytes, the logs lag is read from
    replicas: ReplicaStates  # high watermarks
    cluster: ClusterView  # lag is reported by each partition's leader only
    groups: GroupOffsets  # committed offsets, for lag
    lifecycle: ClosingFlag  # a scrape stops reading logs once they are closing
    data_dir: str  # free and total bytes of its file system
