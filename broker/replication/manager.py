"""``ReplicaManager``: applies the cluster view's partition states to this broker's logs.

Why one owner: leadership, follower fetchers, ISR proposals and high-watermark checkpoints
all change together when a partition state changes, and all of them must agree with the view
or the broker acknowledges writes it should not. The manager hears every state from the view
(``add_listener``), turns each into a transition of the partition's ``Partition`` (leader,
follower, or not a replica), moves the partition between per-leader fetchers, and runs one
periodic task that shrinks the ISR of partitions it leads when followers lag.

Single node (``LocalClusterView``): every partition is led here in epoch 0 with ISR = {self};
``Partition.alone`` makes the high watermark the log end, so the produce and fetch paths do
one dict lookup more than before and nothing else.

What it depends on, and why no more: the logs this broker hosts (``HostedLogs``, storage's
``PartitionLog`` by key), the cluster view, and two callables the broker hands it at start,
its clock and the notifier that wakes long polls when a log or its high watermark moves.
It never sees the server: replication is below the request handlers, which call it, and an
import of the server from here was the cycle issue 21 removed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Callable, Protocol

from tslog.protocol.sasl import ScramLogin

from ..cluster.view import ClusterView, PartitionState, StaleStateError
from ..metrics import replication as metrics
from ..storage import PartitionLog
from ..storage.fanout import map_in_threads
from ..storage.producers import largest_in_snapshot
from ..storage.replica import ReplicaLog
from .fetcher import LeaderFetcher
from .partition import FOLLOWER, LEADER, Partition
from .throttle import CatchUpThrottle

log = logging.getLogger("tslog.broker.replication")

ISR_CHECK_MAX_INTERVAL_S = 1.0


def _write_snapshot(taken: tuple) -> None:
    part, snapshot = taken
    try:
        part.replica.write_snapshot(snapshot)
    except Exception:
        log.exception("replication checkpoint of %s-%d failed", *part.key)


class HostedLogs(Protocol):
    """The partition logs this broker holds, by (topic, partition); topics add and remove
    them while the broker runs, so the manager reads the mapping each time it needs it."""

    logs: dict[tuple[str, int], PartitionLog]
    logs_added: int  # grows by one per log added to ``logs``, so a change is seen without a scan


class ReplicaManager:
    """Args:
        hosted: the logs this broker holds (the broker's ``TopicManager``).
        view: who leads what, who is live; ISR proposals and producer ids.
        now_ms: the broker's clock (ISR lag, leader epochs' start).
        notify: wakes the long polls waiting on a ``Partition`` (followers) or a
            ``PartitionLog`` (consumers, when the high watermark moves).
        fetch_wait_max_ms: how long a follower's Fetch long-polls its leader.
        clustered: report replication events to metrics (a single node has none to report).
        login: makes a follower connection's SCRAM login (``inter_broker_sasl_*``).
        throttle_rate_bytes_s: ``leader_replication_throttled_rate`` (0 = no limit).
    """

    def __init__(self, hosted: HostedLogs, view: ClusterView, *, now_ms: Callable[[], int],
                 notify: Callable[[object], None], fetch_wait_max_ms: int,
                 clustered: bool, login: Callable[[], ScramLogin] | None = None,
                 peer_ssl: ssl.SSLContext | None = None, throttle_rate_bytes_s: int = 0) -> None:
        self.hosted = hosted
        self.peer_ssl = peer_ssl  # TLS to the leaders (the listener speaks TLS), or None
        self.view = view
        self.now_ms = now_ms
        self.notify = notify
        self.fetch_wait_max_ms = fetch_wait_max_ms
        self.login = login  # followers' SCRAM login at their leaders (None: no SASL)
        self.node_id = view.node_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        # What replicas a reassignment adds may fetch here before they are in sync.
        self.throttle = CatchUpThrottle(throttle_rate_bytes_s)
        self.fetchers: dict[int, LeaderFetcher] = {}
        self._proposing: set[tuple[str, int]] = set()
        self._claims: dict[tuple[str, int], int] = {}  # partitions requests off the loop hold
        self._tasks: set[asyncio.Task] = set()
        self._started = False
        # A single node reports no replication events (its metrics stay 0, not "elections").
        self._clustered = clustered

    # -- lookup ----------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> Partition | None:
        """The partition's state here, or None when this broker holds no log for it.

        A log not seen before was created since ``open_all`` (a new topic or replica; the
        logs opened from disk got theirs in the thread that opened them), so it holds no
        batch and building its ``ReplicaLog`` here scans no header: it reads at most the
        three small files beside the log, which a new directory does not have. Or it is a
        dormant log (closed cleanly, unopened since the start): its first use opens it
        here, and its files beside the log are current (no header scan either)."""
        plog = self.hosted.logs.get((topic, partition))
        part = self.partitions.get((topic, partition))
        if part is not None and part.log is plog:
            return part
        if plog is None:
            gone = self.partitions.pop((topic, partition), None)
            if gone is not None:  # deleted or moved off this broker: nothing waits on it
                self._stop_following(gone)
                gone.fail_waiters()
            return None
        woken = plog.dormant or (topic, partition) in self._claims
        if not woken and plog.log_end_offset > plog.log_start_offset:
            log.warning("%s-%d: replication state of a log with batches built on the loop "
                        "(its header scan belongs in the thread that opened it)", topic, partition)
        return self._install(topic, partition, ReplicaLog(plog), announce=not woken)

    def _install(self, topic: str, partition: int, replica: ReplicaLog,
                 announce: bool) -> Partition:
        part = Partition(topic, partition, replica, self.node_id)
        self.partitions[topic, partition] = part
        state = self.view.partition_state(topic, partition)
        if state is not None:  # a woken log leads as the start's logs do: not one line each
            self._apply(part, state, announce=announce)
        return part

    # -- dormant logs, opened off the loop (``data/waking.py``) -----------------------------

    def dormant_or_held(self, keys, denied=frozenset()) -> list | None:
        """None when every partition ``keys`` names (``(topic, partition, ...)``) can be
        used now: the usual request, a dict lookup per partition. Otherwise the dormant
        logs among them, as ``(key, log)`` (a denied topic's are left alone), possibly none:
        a partition an earlier request claimed (``claim``) is enough to wait."""
        parts, logs, claims = self.partitions, self.hosted.logs, self._claims
        found = None
        for key in keys:
            key = key[0], key[1]
            if key in parts:
                if claims and key in claims:
                    found = found or []
                continue
            plog = logs.get(key)
            if plog is None or key[0] in denied:
                continue
            if plog.dormant:
                found = found or []
                found.append((key, plog))
            elif claims and key in claims:
                found = found or []
        return found

    def claim(self, keys) -> None:
        """Mark partitions a request waiting off the loop will use: until ``release``, a
        request naming one waits too (``dormant_or_held``), and their state built on the
        loop meanwhile is a woken log's (``get``)."""
        claims = self._claims
        for key in keys:
            claims[key] = claims.get(key, 0) + 1

    def release(self, keys) -> None:
        claims = self._claims
        for key in keys:
            left = claims.pop(key) - 1
            if left:
                claims[key] = left

    @staticmethod
    def wake(dormant: list) -> list[tuple[tuple[str, int], PartitionLog, ReplicaLog]]:
        """In a worker thread: open each of ``dormant_or_held``'s logs and build its
        replication state, the storage work of a first use (files read, indexes mapped).
        A log that cannot be opened is left out: the request's own use of it fails with
        its error code."""
        woken = []
        for key, plog in dormant:
            try:
                woken.append((key, plog, ReplicaLog(plog)))
            except Exception:  # noqa: BLE001 - the request's own use reports it
                log.debug("%s-%d: not opened off the loop", *key, exc_info=True)
        return woken

    def adopt(self, woken: list) -> None:
        """On the loop, after ``wake``: give each woken log its partition state, unless a
        request gave it one meanwhile or the log was replaced: that one stays."""
        logs, parts = self.hosted.logs, self.partitions
        for (topic, partition), plog, replica in woken:
            if (topic, partition) not in parts and logs.get((topic, partition)) is plog:
                self._install(topic, partition, replica, announce=False)

    def get_all(self, keys) -> list[Partition | None]:
        """``get(topic, partition)`` of each ``(topic, partition, ...)`` in ``keys``, in one
        call: a request over many partitions pays a Python call per partition only for one
        whose state is not current (``get`` builds or drops it); the usual one is two
        dict lookups and an identity check here."""
        logs, parts = self.hosted.logs.get, self.partitions.get
        found = []
        for key in keys:
            key = key[0], key[1]
            part = parts(key)
            if part is None or part.log is not logs(key):
                part = self.get(*key)
            found.append(part)
        return found

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        """Every partition's high watermark (retention keeps what lies at or past it)."""
        logs = self.hosted.logs
        return {key: part.high_watermark for key, part in list(self.partitions.items())
                if logs.get(key) is part.log}

    def is_current(self, part: Partition) -> bool:
        """False once ``part``'s log was deleted or replaced (topic deleted, re-created)."""
        return self.get(*part.key) is part

    def may_acknowledge(self) -> bool:
        """False while our leadership may be in doubt (our session may have expired)."""
        return self.view.may_acknowledge()

    def broker_address(self, node_id: int) -> tuple[str, int] | None:
        return self.view.brokers().get(node_id)

    # -- lifecycle -------------------------------------------------------------------------

    def open_all(self) -> None:
        """Open the replication state of every open log (reads headers: run it in a
        thread); a dormant log gets its own at its first use (``get``)."""
        for (topic, partition), plog in self.hosted.logs.items():
            if not plog.dormant:
                self.partitions[topic, partition] = Partition(
                    topic, partition, ReplicaLog(plog), self.node_id)

    def largest_producer_id(self) -> int:
        """The largest producer id the logs hold (0 if none): a single node hands out ids
        above it; a cluster allocates them in its store. A dormant log's are in its producer
        snapshot, current since its clean close (one small file read, no log opened)."""
        opened = (pid for part in self.partitions.values()
                  for pid in part.replica.producers.producers)
        dormant = (largest_in_snapshot(plog.directory) for plog in self.hosted.logs.values()
                   if plog.dormant)
        return max(max(opened, default=0), max(dormant, default=0))

    def start(self) -> None:
        """Apply the current states and follow the view's changes (on the event loop)."""
        self._started = True
        self.view.add_listener(self.on_state)
        for key, plog in list(self.hosted.logs.items()):
            if plog.dormant:  # its first use applies its state (``get``)
                continue
            part = self.get(*key)
            state = self.view.partition_state(*key)
            if part is not None and state is not None:
                self._apply(part, state, announce=False)
        leading = sum(part.role == LEADER for part in self.partitions.values())
        log.info("leading %d of the %d partitions hosted here (each from its log end; "
                 "later changes are logged one by one); %d more, closed cleanly, take their "
                 "state at their first use", leading, len(self.partitions),
                 len(self.hosted.logs) - len(self.partitions))
        self._spawn(self._isr_loop(), "tslog-isr-check")

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for fetcher in list(self.fetchers.values()):
            await fetcher.stop()
        self.fetchers.clear()
        for part in self.partitions.values():
            part.fail_waiters()

    def checkpoint_all(self) -> None:
        """At shutdown: persist every changed partition's high watermark and producer
        snapshot (each writes its epoch file's newest content first). Epoch writes still
        queued for other partitions run when the topics close the I/O worker, which they
        do before closing the logs."""
        self.write_snapshots(self.snapshots())

    def snapshots(self) -> list:
        """On the loop: what each changed partition's checkpoint must write."""
        taken = []
        for part in list(self.partitions.values()):
            if part.alone:
                part.replica.high_watermark = part.log.log_end_offset
            snapshot = part.replica.checkpoint_snapshot()
            if snapshot is not None:
                taken.append((part, snapshot))
        return taken

    @staticmethod
    def write_snapshots(taken: list) -> None:
        """Write ``snapshots()``'s result; safe in a worker thread (fsyncs off the loop),
        which hands the partitions to a few threads of its own (``storage.fanout``)."""
        map_in_threads(_write_snapshot, taken, "tslog-snapshots")

    # -- state changes ---------------------------------------------------------------------

    def on_state(self, state: PartitionState) -> None:
        """The view's listener: a new or changed partition state."""
        part = self.get(state.topic, state.partition)
        if part is not None:
            self._apply(part, state)

    def _apply(self, part: Partition, state: PartitionState, announce: bool = True) -> None:
        self.notify(part)  # long-polling followers re-check who leads
        current = part.state
        if current is not None and state.version < current.version and (
                state.leader_epoch <= current.leader_epoch):
            return  # an older state delivered late
        if state.leader == self.node_id:
            if self._clustered and current is not None and current.leader == self.node_id:
                # Counted wherever the change came from: our proposal or the controller
                # removing a dead broker (whichever etcd applied first).
                if len(state.isr) < len(current.isr):
                    metrics.isr_shrunk()
                elif len(state.isr) > len(current.isr):
                    metrics.isr_expanded()
            self._stop_following(part)
            if self._clustered and (part.role != LEADER
                                    or part.leader_epoch != state.leader_epoch):
                metrics.leader_elected()
            part.become_leader(state, self.now_ms(), announce)
            self.notify(part.log)  # the HW may have moved
        elif self.node_id in state.replicas:
            leader_changed = (part.role != FOLLOWER or current is None
                              or current.leader != state.leader
                              or current.leader_epoch != state.leader_epoch)
            part.become_follower(state)
            if leader_changed:
                self._stop_following(part)
                if state.leader >= 0 and self._started:
                    self._fetcher(state.leader).add(part)
        else:
            self._stop_following(part)
            part.become_follower(state)
        if self._clustered and (current is None or current.isr != state.isr
                                or current.leader != state.leader
                                or current.replicas != state.replicas):
            self._count_led_states()

    def _count_led_states(self) -> None:
        """Under-replicated (ISR smaller than the replicas before a reassignment added any)
        and reassigning partitions among those led here, for the gauges."""
        led = [p.state for p in self.partitions.values()
               if p.role == LEADER and p.state is not None]
        metrics.set_under_replicated(
            sum(1 for s in led if len(s.isr) < len(s.replicas) - len(s.adding)),
            sum(1 for s in led if s.target))

    def _stop_following(self, part: Partition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(part.key)
        metrics.forget_follower(*part.key)

    def _fetcher(self, leader_id: int) -> LeaderFetcher:
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None:
            fetcher = self.fetchers[leader_id] = LeaderFetcher(
                leader_id, self.node_id, self.broker_address, self.is_current,
                self.fetch_wait_max_ms, self.login, peer_ssl=self.peer_ssl,
                on_refused=self.view.peer_unreachable)
        return fetcher

    # -- ISR -------------------------------------------------------------------------------

    def follower_fetched(self, part: Partition, replica_id: int, fetch_offset: int) -> None:
        """Leader side of a follower's Fetch: its LEO, maybe the HW, maybe an ISR rejoin."""
        high_watermark = part.high_watermark
        if (part.record_follower_fetch(replica_id, fetch_offset, self.now_ms())
                and replica_id in self.view.brokers()):
            # Only a registered broker rejoins: the controller drops one it counts as dead
            # at once, and each of the two undoing the other's change kept a proposal in
            # flight, which an etcd outage then turned into a fenced leader.
            self._propose(part, part.isr | {replica_id}, f"replica {replica_id} caught up")
        if part.high_watermark != high_watermark:
            self.notify(part.log)

    def _propose(self, part: Partition, isr: frozenset[int], why: str) -> None:
        if part.key in self._proposing or part.state is None or part.role != LEADER:
            return
        self._proposing.add(part.key)
        part.begin_join(isr - part.isr)
        state = part.state
        ordered = tuple(r for r in state.replicas if r in isr)
        self._spawn(self._send_proposal(part, state, ordered, why), "tslog-isr-proposal")

    async def _send_proposal(self, part: Partition, state: PartitionState,
                             isr: tuple[int, ...], why: str) -> None:
        try:
            new_state = await self.view.propose_isr(state, isr)
        except StaleStateError as exc:
            log.warning("%s-%d: ISR change to %s refused (%s): fenced", *part.key, isr, exc)
            if part.state is state:
                part.fence()
            return
        except Exception:
            log.exception("%s-%d: ISR proposal failed", *part.key)
            return
        finally:
            self._proposing.discard(part.key)
            part.end_join()
        log.info("%s-%d: ISR %s -> %s (%s)", *part.key, state.isr, new_state.isr, why)
        if self.partitions.get(part.key) is part:
            self._apply(part, new_state)

    def check_isr(self, now_ms: int) -> float:
        """Propose removing lagging followers from the ISR of every partition led here;
        return how soon (s) the next check is due."""
        interval = ISR_CHECK_MAX_INTERVAL_S
        for part in list(self.partitions.values()):
            if part.role != LEADER or part.alone:
                continue
            max_lag_ms = part.log.config.replica_lag_time_max_ms
            interval = min(interval, max_lag_ms / 4000)
            lagging = part.lagging_followers(now_ms, max_lag_ms)
            if lagging:
                self._propose(part, part.isr - set(lagging),
                              f"replicas {lagging} behind for over {max_lag_ms} ms")
        return max(interval, 0.02)

    async def _isr_loop(self) -> None:
        seen = None  # ``hosted.logs_added`` at the last pick-up
        while True:
            interval = self.check_isr(self.now_ms())
            if self.hosted.logs_added != seen:  # scans every log, held up the loop: only
                seen = self.hosted.logs_added   # when a log was added since the last one
                self._pick_up_new_logs()
            await asyncio.sleep(interval)

    def _pick_up_new_logs(self) -> None:
        """Give the logs created since (a new topic, partition or replica) their state now, so
        a new follower fetches at once; not those unused since the start (dormant): their
        first use does."""
        for key, plog in list(self.hosted.logs.items()):
            if key not in self.partitions and not plog.dormant:
                self.get(*key)

    def _spawn(self, coroutine, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
