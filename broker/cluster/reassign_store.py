"""``EtcdReassignments``: start and cancel partition reassignments in etcd, from any broker.

A request changes the partition's own key (``reassignment.py`` says how) with a
compare-and-swap on its version, like an ISR proposal, and is answered once this broker's
watch has applied it. A lost race (the leader changed the ISR meanwhile) is tried again from
the newer state. What happens next is the controller's: it completes the move when the new
replicas are in sync, and, being a sweep over etcd, so does its successor after a failover.
"""

from __future__ import annotations

import asyncio

from tslog.protocol.errors import ErrorCode

from .etcd_view import EtcdClusterView
from .reassignment import ReassignmentError, cancelled, preferred, started
from .records import encode_state
from .view import PartitionState

ATTEMPTS = 20  # compare-and-swap attempts before answering "try again"
RETRY_DELAY_S = 0.05  # after a lost race: let the watch deliver the newer state


class EtcdReassignments:
    def __init__(self, view: EtcdClusterView, timeout_s: float) -> None:
        self.view = view
        self.timeout_s = timeout_s  # how long to wait for our own watch to apply a change

    async def alter(self, topic: str, partition: int, target: tuple[int, ...] | None) -> None:
        """Reassign the partition to ``target``, or cancel its reassignment (None).
        Raises ReassignmentError, or EtcdError when etcd cannot be reached."""
        registered = self.view.cache.brokers

        def change(state: PartitionState) -> PartitionState | None:
            return cancelled(state) if target is None else started(state, target,
                                                                   set(registered))
        await self._write(topic, partition, change)

    async def elect_preferred(self, topic: str, partition: int) -> None:
        """Make the partition's preferred replica its leader. Raises ReassignmentError
        (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE) or EtcdError."""
        live = self.view.cache.brokers

        def change(state: PartitionState) -> PartitionState:
            new = preferred(state, set(live))
            if new is not None:
                return new
            if state.leader == state.replicas[0]:
                raise ReassignmentError(ErrorCode.ELECTION_NOT_NEEDED,
                                        f"broker {state.leader} leads already")
            raise ReassignmentError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                    f"broker {state.replicas[0]} is not live and in sync, "
                                    f"or a reassignment runs")
        await self._write(topic, partition, change)

    async def _write(self, topic: str, partition: int, change) -> None:
        """Apply ``change`` (state -> new state, or None for nothing to do) with a
        compare-and-swap, again from the newer state after a lost race."""
        view = self.view
        etcd, key = view.etcd, view.keys.partition(topic, partition)
        for _ in range(ATTEMPTS):
            state = self.state(topic, partition)
            new = change(state)
            if new is None:
                return  # the replicas are the target already
            ok, revision = await etcd.txn([etcd.mod_is(key, state.version)],
                                          [etcd.put(key, encode_state(new))])
            if ok:
                await view.wait_for_revision(revision, self.timeout_s)
                return
            await asyncio.sleep(RETRY_DELAY_S)
        raise ReassignmentError(ErrorCode.REQUEST_TIMED_OUT,
                                f"{topic}-{partition} kept changing; try again")

    def state(self, topic: str, partition: int) -> PartitionState:
        state = self.view.partition_state(topic, partition)
        if state is None or topic not in self.view.cache.topics:
            raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                    f"no partition {topic}-{partition}")
        return state

    def under_way(self) -> list[PartitionState]:
        """Every partition with a reassignment under way, by topic and partition."""
        return sorted((s for s in self.view.cache.partitions.values() if s.target),
                      key=lambda s: (s.topic, s.partition))

    def not_preferred(self) -> list[tuple[str, int]]:
        """(topic, partition) of every partition its preferred replica does not lead."""
        return sorted(key for key, s in self.view.cache.partitions.items()
                      if s.leader != s.replicas[0])
