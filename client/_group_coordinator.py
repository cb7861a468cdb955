"""Where a consumer group's requests go: the broker that FindCoordinator names.

Why ask rather than assume: which broker coordinates a group is the cluster's choice (see
docs/groups.md), and it moves on failover. Clients ask once, remember the answer per group,
and ask again when a broker answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, as Kafka
clients do.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable, Iterable

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from .errors import TslogError, raise_for

# Codes meaning "this broker is not (or no longer, or not yet) the group's coordinator".
MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})


class GroupCoordinators:
    """The coordinator node of each group this client talks to, found on first use."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._nodes: dict[str, int] = {}

    async def node(self, group_id: str) -> int:
        """The coordinator's node id. Raises the FindCoordinator error (e.g.
        InvalidGroupIdError; CoordinatorNotAvailableError, retriable)."""
        node = self._nodes.get(group_id)
        if node is None:
            body = await self._cluster.request(None, ApiKey.FIND_COORDINATOR,
                                               {"key_type": "group", "keys": [group_id]})
            entry = body["coordinators"][0]
            raise_for(entry["error_code"], f"finding the coordinator of group {group_id!r}")
            node = entry["node_id"]
            if node not in self._cluster.brokers:
                await self._cluster.refresh_metadata()
            self._nodes[group_id] = node
        return node

    def forget(self, group_id: str) -> None:
        self._nodes.pop(group_id, None)

    async def request(self, group_id: str, api_key: int, body: dict,
                      codes: Callable[[dict], Iterable[int]], *, api_version: int = 0,
                      timeout_ms: int | None = None) -> dict:
        """Send ``body`` to the group's coordinator and return the answer; when ``codes`` of
        the answer hold a MOVED code, or the coordinator cannot be reached (its broker died:
        connections refused, or it left the metadata), find the coordinator again and resend,
        with the cluster's backoff, until the cluster's request timeout has passed since the
        first try: long enough to ride out a controller failover, as Kafka's commitSync does.
        The answer is returned as is otherwise: other codes are the caller's to read."""
        deadline = time.monotonic() + self._cluster.request_timeout_ms / 1000
        attempt = 0
        while True:
            try:
                node = await self.node(group_id)
                answer = await self._cluster.request(node, api_key, body,
                                                     api_version=api_version,
                                                     timeout_ms=timeout_ms)
            except TslogError as exc:
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
            else:
                if not MOVED.intersection(codes(answer)) or time.monotonic() >= deadline:
                    return answer
            self.forget(group_id)
            await asyncio.sleep(self._cluster.backoff_s(attempt))
            attempt += 1
            try:
                await self._cluster.refresh_metadata()
            except TslogError as exc:
                if not exc.retriable or time.monotonic() >= deadline:
                    raise
