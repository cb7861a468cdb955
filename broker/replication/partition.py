"""One partition's replication state on this broker: leader or follower, HW, ISR tracking.

Theory of operation
-------------------
The control plane (``ClusterView``) says who leads the partition in which epoch and who is in
sync. This object turns that into the data-path rules:

- **Leader.** Appends stamp the leader epoch. Every follower's fetch offset is its log end
  offset (LEO): a follower asks for offset N only after it has everything below N. The high
  watermark is the minimum LEO over the ISR (this broker's own LEO included) and only ever
  moves forward; consumers read below it, and an acks=all produce is answered once it passes
  the produced batch. A follower is *caught up* at the time of a fetch at the leader's LEO,
  or, if it fetched at least the LEO the leader had at its previous fetch, at that previous
  fetch's time (Kafka's rule, so a steady stream does not look like lag). A follower not
  caught up for ``replica.lag.time.max.ms`` leaves the ISR; a follower outside it whose LEO
  reaches the HW and this epoch's start offset comes back. ISR changes are proposals to the
  view, compare-and-swap on the state's version.
- **Fenced.** A proposal refused as stale means another broker may lead now: this one stops
  acknowledging (produce answers NOT_LEADER_OR_FOLLOWER, waiting acks=all produces fail)
  until the view says what it is.
- **Follower.** The log follows the leader's (see ``fetcher.py``); its HW is the leader's,
  capped by its own LEO. It serves no client reads or writes.

Everything here runs on the event loop and is O(1) per call (O(ISR) for the HW).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging

from ..cluster.view import PartitionState
from ..storage.replica import ReplicaLog

log = logging.getLogger("tslog.broker.replication")

LEADER = "leader"
FOLLOWER = "follower"
FENCED = "fenced"

_tiebreak = itertools.count()


class NotLeaderError(Exception):
    """This broker does not lead the partition (or lost its epoch) and must not acknowledge."""


class Partition:
    def __init__(self, topic: str, partition: int, replica: ReplicaLog, node_id: int) -> None:
        self.topic = topic
        self.partition = partition
        self.replica = replica
        self.log = replica.log
        self.node_id = node_id
        self.role = FOLLOWER
        self.state: PartitionState | None = None
        self.leader_epoch = -1
        self.epoch_start_offset = 0
        self.isr: frozenset[int] = frozenset()
        # Replicas an ISR expansion proposed to the view is adding: until it resolves they
        # count as in the ISR for the HW (Kafka's "maximal ISR", KIP-497), so nothing is
        # acknowledged that a replica about to be in the ISR lacks (it could be elected).
        self.joining: frozenset[int] = frozenset()
        self.alone = False  # leader with ISR == {self}: HW is simply the log end
        self.follower_leo: dict[int, int] = {}
        self.caught_up_ms: dict[int, int] = {}
        self._last_fetch: dict[int, tuple[int, int]] = {}  # replica -> (leader LEO, time)
        self._waiters: list = []  # heap of (offset, tiebreak, future): acks=all produces

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def is_leader(self) -> bool:
        return self.role == LEADER

    @property
    def high_watermark(self) -> int:
        if self.alone:
            return self.log.log_end_offset
        return self.replica.high_watermark

    # -- transitions -----------------------------------------------------------------------

    def become_leader(self, state: PartitionState, now_ms: int, announce: bool = True) -> None:
        """Lead in ``state``'s epoch. ``announce``: log it (a broker's start logs one line
        for every partition it leads instead, ``ReplicaManager.start``)."""
        new_epoch = self.role != LEADER or state.leader_epoch != self.leader_epoch
        if self.alone:  # everything was committed while alone: the HW must not step back
            self.replica.high_watermark = max(self.replica.high_watermark,
                                              self.log.log_end_offset)
        self.state = state
        self.role = LEADER
        self.isr = frozenset(state.isr)
        self.alone = self.isr == {self.node_id} and not self.joining
        if new_epoch:
            self.leader_epoch = state.leader_epoch
            self.replica.become_leader(state.leader_epoch)
            self.epoch_start_offset = self.log.log_end_offset
            # Followers get the full lag time from now before they can be judged behind.
            self.follower_leo = {r: -1 for r in state.replicas if r != self.node_id}
            self.caught_up_ms = {r: now_ms for r in state.replicas if r != self.node_id}
            self._last_fetch = {}
            if announce:
                log.info("%s-%d: leader in epoch %d from offset %d, ISR %s", self.topic,
                         self.partition, state.leader_epoch, self.epoch_start_offset, state.isr)
        for replica in state.replicas:  # replicas added to the assignment since
            if replica != self.node_id and replica not in self.follower_leo:
                self.follower_leo[replica] = -1
                self.caught_up_ms[replica] = now_ms
        self.maybe_advance_high_watermark()

    def become_follower(self, state: PartitionState) -> None:
        if self.alone:
            self.replica.high_watermark = max(self.replica.high_watermark,
                                              self.log.log_end_offset)
        self.state = state
        self.role = FOLLOWER
        self.leader_epoch = state.leader_epoch
        self.isr = frozenset(state.isr)
        self.alone = False
        self.fail_waiters()

    def fence(self) -> None:
        """Our epoch is gone (a proposal was refused): stop acknowledging until told more."""
        if self.role == LEADER:
            log.warning("%s-%d: lost leader epoch %d; no longer acknowledging", self.topic,
                        self.partition, self.leader_epoch)
            if self.alone:
                self.replica.high_watermark = max(self.replica.high_watermark,
                                                  self.log.log_end_offset)
            self.role = FENCED
            self.alone = False
            self.fail_waiters()

    # -- leader: followers and the high watermark ------------------------------------------

    def record_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> bool:
        """A follower fetched at ``fetch_offset``. Returns True when it should join the ISR."""
        if replica_id not in self.follower_leo:
            return False
        leader_leo = self.log.log_end_offset
        self.follower_leo[replica_id] = fetch_offset
        previous = self._last_fetch.get(replica_id)
        if fetch_offset >= leader_leo:
            self.caught_up_ms[replica_id] = now_ms
        elif previous is not None and fetch_offset >= previous[0]:
            self.caught_up_ms[replica_id] = max(self.caught_up_ms[replica_id], previous[1])
        self._last_fetch[replica_id] = (leader_leo, now_ms)
        if replica_id in self.isr or replica_id in self.joining:
            self.maybe_advance_high_watermark()
            return False
        return fetch_offset >= max(self.high_watermark, self.epoch_start_offset)

    def begin_join(self, replicas: frozenset[int]) -> None:
        """An ISR expansion adding ``replicas`` was proposed: count them in from now."""
        self.joining = replicas
        if replicas:
            self.alone = False

    def end_join(self) -> None:
        """The expansion was decided (the view's answer, applied next, says how)."""
        self.joining = frozenset()
        self.alone = self.role == LEADER and self.isr == {self.node_id}

    def lagging_followers(self, now_ms: int, max_lag_ms: int) -> list[int]:
        """ISR members not caught up within ``max_lag_ms``."""
        return [r for r in self.isr if r != self.node_id
                and now_ms - self.caught_up_ms.get(r, now_ms) > max_lag_ms]

    def maybe_advance_high_watermark(self) -> bool:
        """HW = min LEO over the ISR, never backwards. Returns True if it moved."""
        if self.role != LEADER:
            return False
        leo = self.log.log_end_offset
        if self.alone:
            new = leo
        else:
            new = min([leo] + [self.follower_leo.get(r, -1) for r in self.isr | self.joining
                               if r != self.node_id])
        replica = self.replica
        if new <= replica.high_watermark:
            return False
        replica.high_watermark = new
        self._wake_waiters(new)
        return True

    def follower_high_watermark(self, leader_high_watermark: int) -> None:
        self.replica.high_watermark = min(leader_high_watermark, self.log.log_end_offset)

    # -- acks=all --------------------------------------------------------------------------

    def wait_for_high_watermark(self, offset: int) -> asyncio.Future:
        """A future resolved once the HW reaches ``offset`` (failed with NotLeaderError if
        this broker stops leading first)."""
        future = asyncio.get_running_loop().create_future()
        if self.high_watermark >= offset:
            future.set_result(None)
        elif self.role != LEADER:
            future.set_exception(NotLeaderError(f"{self.topic}-{self.partition}"))
        else:
            heapq.heappush(self._waiters, (offset, next(_tiebreak), future))
        return future

    def _wake_waiters(self, high_watermark: int) -> None:
        waiters = self._waiters
        while waiters and waiters[0][0] <= high_watermark:
            future = heapq.heappop(waiters)[2]
            if not future.done():
                future.set_result(None)

    def fail_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for _, _, future in waiters:
            if not future.done():
                future.set_exception(NotLeaderError(f"{self.topic}-{self.partition}"))
