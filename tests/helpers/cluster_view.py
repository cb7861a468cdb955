"""``MemoryClusterView``: an in-memory test double of the ClusterView (never of a broker).

It behaves like the control plane the data path talks to: partition states with versions,
listeners called on every change, ISR proposals that compare-and-swap on the version and on
the proposer leading the epoch, and unique producer ids. Tests change states with ``set``
(as the controller would after an election) and read the proposals they got.
"""

from __future__ import annotations

import asyncio
import dataclasses

from tslog.broker.cluster.view import PartitionState, StaleStateError, leaders_of


class MemoryClusterView:
    def __init__(self, node_id: int, addresses: dict[int, tuple[str, int]] | None = None):
        self.node_id = node_id
        self.addresses = dict(addresses or {node_id: ("127.0.0.1", 1)})
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.listeners = []
        self.proposals: list[tuple[int, ...]] = []
        self.refuse_proposals = False
        self.lease_valid = True  # False: as a broker whose session may have expired
        self.unreachable: list[tuple[int, tuple[str, int]]] = []
        self._next_producer_id = 1000

    def brokers(self):
        return dict(self.addresses)

    def controller_id(self) -> int:
        return self.node_id

    def partition_state(self, topic, partition):
        return self.states.get((topic, partition))

    def partition_leaders(self, topic, count):
        return leaders_of(self.states, topic, count)

    def add_listener(self, listener) -> None:
        self.listeners.append(listener)

    def set(self, topic, partition, *, leader, epoch, isr, replicas=(0, 1, 2)) -> PartitionState:
        old = self.states.get((topic, partition))
        state = PartitionState(topic, partition, leader, epoch, tuple(isr), tuple(replicas),
                               (old.version + 1) if old else 0)
        self.states[topic, partition] = state
        for listener in self.listeners:
            listener(state)
        return state

    async def propose_isr(self, state, isr):
        await asyncio.sleep(0)
        self.proposals.append(tuple(isr))
        current = self.states.get((state.topic, state.partition))
        if (self.refuse_proposals or current is None or current.version != state.version
                or current.leader != self.node_id):
            raise StaleStateError(f"version {state.version} is not current")
        new = dataclasses.replace(current, isr=tuple(isr), version=current.version + 1)
        self.states[state.topic, state.partition] = new
        for listener in self.listeners:
            listener(new)
        return new

    async def allocate_producer_id(self) -> int:
        self._next_producer_id += 1
        return self._next_producer_id

    def may_acknowledge(self) -> bool:
        return self.lease_valid

    def peer_unreachable(self, node_id, address) -> None:
        self.unreachable.append((node_id, tuple(address)))
