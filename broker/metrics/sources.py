"""``ScrapeSources``: what a metrics scrape reads, handed over once when the endpoint starts.

Why not the broker: a scrape reads partition logs, high watermarks, who leads what, the
groups' committed offsets and coordinator state, the clock, the data directory and whether
the logs are closing; given the whole broker it could reach, and come to depend on, anything. The server builds these when
the broker opens (``server/state.py``); a test builds them from whatever it has.

Where a field's class lives in the server or in replication, which both import the metrics,
it is typed by the few attributes a scrape uses (the protocols below), so the metrics never
import back up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from ..cluster.view import ClusterView
from ..groups import GroupDescription, GroupListing
from ..topics import TopicManager


class ReplicaStates(Protocol):
    """The replication state of hosted partitions (``replication.manager.ReplicaManager``):
    ``partitions[(topic, partition)]`` has ``log`` and ``high_watermark``."""

    partitions: dict


class GroupOffsets(Protocol):
    """Every group's committed offsets (``groups.committed_offsets.CommittedOffsets``)."""

    def all_groups(self) -> dict[str, dict]: ...


class GroupDescriptions(Protocol):
    """The group coordinator as a scrape reads it (``groups.GroupCoordinator``)."""

    def list_groups(self) -> list[GroupListing]: ...

    def describe(self, group_id: str) -> GroupDescription: ...


class Coordinated(Protocol):
    """Holds the coordinator (``groups.service.GroupService``). Read at every scrape,
    not once, so a coordinator rebuilt on taking over groups is the one reported; None while
    there is none (a clustered broker between terms as controller)."""

    coordinator: GroupDescriptions | None


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
    coordination: Coordinated  # consumer groups' states, members and epochs
    now_ms: Callable[[], int]  # the broker's clock (LATs are stamped from it), for lag age
