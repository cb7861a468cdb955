"""Follower fetching: one task per source leader copies its partitions' batches byte for byte.

Theory of operation
-------------------
For every partition this broker follows, the ``ReplicaManager`` hands the partition to the
``LeaderFetcher`` of its leader. The fetcher keeps one connection to that broker (a small
request/response channel of its own: the broker never imports the client) and loops:

1. Partitions that just got a new leader first ask ``OffsetForLeaderEpoch`` for the end, in
   the leader's log, of the latest epoch this replica knows, and truncate there (KIP-101):
   everything below it is identical on both sides, everything above it never committed.
   When the leader does not know that epoch it answers the largest epoch it does know; the
   replica then also caps the cut at its own end of that epoch (KIP-279).
2. One Fetch with ``replica_id = node_id`` for all of them (each at its log end offset), long
   polling at the leader. The leader reads a follower's fetch offset as its log end offset.
   A partition added during a long poll ends it (the connection is dropped and remade), so
   a new partition is copied, and its acks=all produces answered, without waiting it out:
   a poll at the leader lasts up to ``replica_fetch_wait_max_ms`` and covers only the
   partitions it named. The request is awaited directly, not raced in a task against a
   "changed" event: ``add`` interrupts it, so a fetch round costs no tasks.
3. Each returned batch goes to ``ReplicaLog.append_as_follower`` as it is (no re-stamping:
   the follower's segments and indexes come out identical), and the follower takes the
   leader's high watermark, capped by its own log end.

A fetch offset the leader refuses as out of range means either that retention ran on the
leader past this replica's log end while it was away (ListOffsets EARLIEST tells: the replica
then drops its log and starts over, empty, at the leader's log start) or that the logs
diverged (the epochs are checked again). Other errors back off and retry; a partition whose
leader says it does not lead waits for the view to say who does (the manager then moves it
to another fetcher).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Callable

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import EARLIEST_TIMESTAMP, ApiKey
from tslog.protocol.records import split_batches
from tslog.protocol.sasl import ScramLogin

from ..metrics import replication as replication_metrics
from ..storage import LogClosedError, NonContiguousOffsetError
from ..storage.epochs import UNDEFINED
from .channel import LeaderChannel, RequestInterrupted
from .partition import Partition

log = logging.getLogger("tslog.broker.replication")

PARTITION_MAX_BYTES = 4 << 20
FETCH_MAX_BYTES = 16 << 20
RETRY_BACKOFF_S = 0.1
_MAX_FRAME_BYTES = FETCH_MAX_BYTES + (8 << 20)


class LeaderFetcher:
    """Replicates every partition this broker follows from one leader.

    Args:
        leader_id: the broker fetched from.
        node_id: this broker (the ``replica_id`` of its requests).
        address_of: a live broker's advertised (host, port) by id, None when it is not live;
            asked before every connection, so a leader that moved is followed.
        is_current: False once a partition's log was deleted or replaced here (dropped).
        fetch_wait_max_ms: how long one Fetch long-polls the leader.
        login: makes the SCRAM login of a new connection (``inter_broker_sasl_*``); None
            without SASL.
        peer_ssl: the TLS context to dial leaders with (None: plain TCP).
        on_refused: called with (leader id, address) when the leader's port refuses a
            connection: its process is likely gone, which the view confirms and acts on
            long before the leader's lease would expire.

    The manager that owns it passes these rather than itself, so this module needs nothing
    of the manager (the two imported each other before).
    """

    def __init__(self, leader_id: int, node_id: int,
                 address_of: Callable[[int], tuple[str, int] | None],
                 is_current: Callable[[Partition], bool], fetch_wait_max_ms: int,
                 login: Callable[[], ScramLogin] | None = None, *,
                 peer_ssl: ssl.SSLContext | None = None,
                 on_refused: Callable[[int, tuple[str, int]], None] | None = None) -> None:
        self.leader_id = leader_id
        self.on_refused = on_refused
        self.peer_ssl = peer_ssl
        self.node_id = node_id
        self.address_of = address_of
        self.is_current = is_current
        self.fetch_wait_max_ms = fetch_wait_max_ms
        self.login = login  # the inter-broker SCRAM login of each new connection, if SASL
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.unsure: set[tuple[str, int]] = set()  # must truncate before fetching
        self.behind: set[tuple[str, int]] = set()  # fetch offset out of the leader's range
        self._added = False  # a partition was added since this loop turn began
        self._polling = False  # a Fetch is in flight (``add`` interrupts it)
        self._task: asyncio.Task | None = None
        self.channel: LeaderChannel | None = None

    def add(self, part: Partition) -> None:
        self.partitions[part.key] = part
        self.unsure.add(part.key)
        self._added = True
        if self._polling:
            self.channel.interrupt()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"tslog-fetcher-{self.leader_id}")

    def remove(self, key: tuple[str, int]) -> None:
        self.partitions.pop(key, None)
        self.unsure.discard(key)
        self.behind.discard(key)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self.channel is not None:
            self.channel.close()

    async def _run(self) -> None:
        while self.partitions:
            address = None
            try:
                address = self.address_of(self.leader_id)
                if address is None:
                    raise ConnectionError(f"broker {self.leader_id} is not live")
                if self.channel is None or (self.channel.host, self.channel.port) != address:
                    if self.channel is not None:
                        self.channel.close()
                    self.channel = LeaderChannel(*address, f"replica-{self.node_id}",
                                                 _MAX_FRAME_BYTES, self.login, ssl=self.peer_ssl)
                self._added = False  # a partition added from here on ends the next poll
                if self.behind:
                    await self._check_log_start()
                if self.unsure:
                    await self._truncate()
                await self._fetch_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a leader gone or garbled: retry
                log.info("fetching from broker %d: %r; retrying", self.leader_id, exc)
                if isinstance(exc, ConnectionRefusedError) and address is not None \
                        and self.on_refused is not None:
                    self.on_refused(self.leader_id, address)
                if self.channel is not None:
                    self.channel.close()
                await asyncio.sleep(RETRY_BACKOFF_S)
        self._task = None

    async def _truncate(self) -> None:
        self._drop_stale()
        keys = list(self.unsure)
        by_topic: dict[str, list] = {}
        for key in keys:
            part = self.partitions.get(key)
            if part is not None:
                by_topic.setdefault(key[0], []).append(
                    {"partition": key[1], "leader_epoch": part.replica.epochs.latest_epoch})
        body = {"replica_id": self.node_id,
                "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()]}
        response = await self.channel.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, body, 10.0)
        for group in response["topics"]:
            for answer in group["partitions"]:
                key = (group["topic"], answer["partition"])
                part = self.partitions.get(key)
                if part is None or answer["error_code"]:
                    continue
                truncate_for_leader(part, answer["leader_epoch"], answer["end_offset"])
                self.unsure.discard(key)

    def _drop_stale(self) -> None:
        for key, part in list(self.partitions.items()):
            if not self.is_current(part):
                self.remove(key)

    async def _check_log_start(self) -> None:
        """Partitions whose fetch offset the leader refused: below the leader's log start
        (retention ran there while this replica was away) start over, empty, at it; above
        its log end means our log diverged, so the epochs are checked again."""
        by_topic: dict[str, list] = {}
        for topic, partition in self.behind:
            by_topic.setdefault(topic, []).append(
                {"partition": partition, "timestamp": EARLIEST_TIMESTAMP})
        body = {"replica_id": self.node_id, "timestamp_type": "append",
                "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()]}
        response = await self.channel.request(ApiKey.LIST_OFFSETS, body, 10.0)
        for group in response["topics"]:
            for answer in group["partitions"]:
                key = (group["topic"], answer["partition"])
                self.behind.discard(key)
                part = self.partitions.get(key)
                if part is None:
                    continue
                if answer["error_code"] == 0 and answer["offset"] > part.log.log_end_offset:
                    log.warning("%s-%d: log end %d is below the leader's log start %d: "
                                "starting over there", *key, part.log.log_end_offset,
                                answer["offset"])
                    part.replica.reset_to(answer["offset"])
                self.unsure.add(key)

    async def _fetch_once(self) -> None:
        self._drop_stale()
        ready = {k: p for k, p in self.partitions.items() if k not in self.unsure}
        if not ready:
            await asyncio.sleep(RETRY_BACKOFF_S)
            return
        by_topic: dict[str, list] = {}
        for (topic, partition), part in ready.items():
            by_topic.setdefault(topic, []).append(
                {"partition": partition, "fetch_offset": part.log.log_end_offset,
                 "max_bytes": PARTITION_MAX_BYTES})
        max_wait_ms = self.fetch_wait_max_ms
        if self.unsure:  # some partitions must ask again soon (their leader was not ready)
            max_wait_ms = min(max_wait_ms, int(RETRY_BACKOFF_S * 1000))
        body = {"replica_id": self.node_id, "max_wait_ms": max_wait_ms,
                "min_bytes": 1, "max_bytes": FETCH_MAX_BYTES,
                "topics": [{"topic": t, "partitions": p} for t, p in by_topic.items()]}
        await self.channel.connect(10.0)
        if self._added:  # added since this turn began: truncate it first, poll after
            return
        self._polling = True  # from here to the write there is no await: add() sees it
        try:
            response = await self.channel.request(ApiKey.FETCH, body,
                                                  max_wait_ms / 1000 + 10.0)
        except RequestInterrupted:
            return  # a partition was added during the long poll: go round again at once
        finally:
            self._polling = False
        errors = False
        moved_starts = []
        for group in response["topics"]:
            for answer in group["partitions"]:
                key = (group["topic"], answer["partition"])
                part = ready.get(key)
                if part is None or self.partitions.get(key) is not part:
                    continue  # moved to another leader while the fetch ran
                if answer["error_code"]:
                    errors = True
                    self._on_error(part, ErrorCode.from_wire(answer["error_code"]))
                    continue
                self._append(part, answer["records"], answer["high_watermark"])
                if answer["log_start_offset"] > part.log.log_start_offset:
                    moved_starts.append((part, answer["log_start_offset"]))
        for part, leader_start in moved_starts:
            await self._follow_log_start(part, leader_start)
        if errors:
            await asyncio.sleep(RETRY_BACKOFF_S)

    def _append(self, part: Partition, records: bytes, leader_high_watermark: int) -> None:
        try:
            if records:
                for batch in split_batches(records):
                    part.replica.append_as_follower(batch)
        except NonContiguousOffsetError as exc:  # our log no longer matches: ask again
            log.warning("%s-%d: %s; re-checking the leader's epochs", *part.key, exc)
            self.unsure.add(part.key)
            return
        part.follower_high_watermark(leader_high_watermark)
        replication_metrics.set_follower_fetch_lag(
            part.topic, part.partition, leader_high_watermark - part.log.log_end_offset)

    async def _follow_log_start(self, part: Partition, leader_start: int) -> None:
        """The leader's log starts later than ours (DeleteRecords there, or its retention):
        start ours there too, as far as we hold records, as Kafka's followers do, so a
        deleted record is not served again after a failover. The fsync and the unlinks run
        in a thread, off the event loop."""
        target = min(leader_start, part.log.log_end_offset)
        try:
            await asyncio.to_thread(part.log.delete_records_before, target)
        except LogClosedError:
            pass  # the partition moved away or its topic was deleted meanwhile

    def _on_error(self, part: Partition, code: ErrorCode) -> None:
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self.behind.add(part.key)  # behind the leader's log start, or diverged
        log.info("%s-%d: leader %d answered %s", part.topic, part.partition, self.leader_id,
                 code.name)


def truncate_for_leader(part: Partition, leader_epoch: int, end_offset: int) -> None:
    """Cut ``part``'s log where it stops agreeing with the leader's (KIP-101, KIP-279)."""
    replica = part.replica
    leo = replica.log_end_offset
    if leader_epoch == UNDEFINED or end_offset == UNDEFINED:
        target = min(replica.high_watermark, leo)  # the leader knows none of our epochs
    else:
        target = end_offset
        if leader_epoch < replica.epochs.latest_epoch:
            target = min(target, replica.epochs.end_offset_for(leader_epoch, leo)[1])
    if target < leo:
        if target < replica.log.log_start_offset:
            target = replica.log.log_start_offset
        removed = replica.truncate_to(target)
        log.warning("%s-%d: truncated to %d (%d bytes) to match the leader's epoch %d",
                    part.topic, part.partition, target, removed, leader_epoch)
