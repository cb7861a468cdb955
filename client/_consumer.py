"""AsyncConsumer: assign or subscribe, seek (by offset or by time), poll, commit.

Two ways to get partitions. ``assign`` reads exactly the partitions given (no group
membership; with a ``group_id``, commits are stored outside group management).
``subscribe`` with a ``group_id`` makes the consumer a member of the group
(``_membership.py``, docs/groups.md): the broker's coordinator hands each member its share of
the partitions, and moves them when members come and go; the changes are applied inside
``poll``, where the rebalance listener runs. ``subscribe`` without a ``group_id`` reads every
partition of the topics. A partition's starting position is its committed offset if the group
has one, else ``auto_offset_reset`` ("latest", "earliest" or "none" to raise
``NoOffsetForPartitionError``).

The fetch pipeline lives in ``_fetcher.py``; this module is the user-facing bookkeeping.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time

from tslog.protocol.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, ApiKey

from ._cluster import Cluster
from ._fetcher import Fetcher, PartitionState
from ._membership import GroupMembership, Rebalance
from ._offsets import group_by_topic, list_offsets
from ._types import ColumnBatch, ConsumerRecord, OffsetAndTimestamp, TopicPartition
from .errors import ClientClosedError, OffsetOutOfRangeError, TslogError, error_for
from .security import Security


log = logging.getLogger("tslog.client.consumer")

_NOTHING = frozenset()


class NoOffsetForPartitionError(OffsetOutOfRangeError):
    """No committed offset and ``auto_offset_reset="none"``, or the position fell off the log."""


class AsyncConsumer:
    """Read records; ``async with AsyncConsumer("host:port", group_id="g") as consumer: ...``.

    Args:
        bootstrap: "host:port[,host:port]".
        *topics: optional topics to subscribe to at once (kafka-python style).
        group_id: enables commit/committed, and group membership for ``subscribe``; None
            for a consumer that stores nothing.
        enable_auto_commit / auto_commit_interval_ms: a group member commits its positions
            at most this often inside ``poll``, before a partition is revoked, and on
            ``close`` (only under group membership: ``assign`` commits only when told).
        max_poll_interval_ms: a member that does not call ``poll`` this long leaves the
            group (its partitions move) and joins again at its next ``poll``.
        heartbeat_interval_ms: heartbeat at least this often; None (the default): as often as
            the coordinator says.
        session_timeout_ms: refused with ValueError: the session timeout is the broker's
            ``group_session_timeout_ms`` (KIP-848 decides it on the broker, and Kafka 4's
            consumer protocol refuses the client setting too); accepted here only to say so.
        auto_offset_reset: where to start without a committed offset.
        fetch_max_wait_ms / fetch_min_bytes: the broker's long poll.
        fetch_max_bytes / max_partition_fetch_bytes: size limits of one Fetch answer.
        key_deserializer / value_deserializer: callables applied to non-null keys/values.
        lookup_poll_us: a time lookup (``offsets_for_times``, ``seek_to_timestamp``,
            beginning/end offsets) polls for its answer this long at most instead of letting
            its thread sleep: on a VM about half the round trip, for at most this much CPU a
            lookup. 0 turns it off.
        connect_timeout_ms: how long setting up a connection may take (docs/client.md).
        security: TLS and SASL/SCRAM options (``tslog.client.security.Security``) for every
            broker connection; None = plain TCP.
    """

    def __init__(self, bootstrap, *topics: str, group_id: str | None = None,
                 auto_offset_reset: str = "latest", fetch_max_wait_ms: int = 500,
                 fetch_min_bytes: int = 1, fetch_max_bytes: int = 16 * 1024 * 1024,
                 max_partition_fetch_bytes: int = 1024 * 1024, request_timeout_ms: int = 30_000,
                 retries: int = 5, retry_backoff_ms: int = 100,
                 client_id: str = "tslog-consumer", key_deserializer=None,
                 value_deserializer=None, lookup_poll_us: int = 100,
                 enable_auto_commit: bool = True, auto_commit_interval_ms: int = 5000,
                 max_poll_interval_ms: int = 300_000,
                 heartbeat_interval_ms: int | None = None,
                 session_timeout_ms: int | None = None, connect_timeout_ms: int = 3_000,
                 security: Security | None = None) -> None:
        if session_timeout_ms is not None:  # Kafka 4's consumer protocol refuses it too
            raise ValueError(
                "session_timeout_ms is the broker's with KIP-848 consumer groups: set "
                "group_session_timeout_ms (TSLOG_GROUP_SESSION_TIMEOUT_MS) on the brokers")
        if auto_offset_reset not in ("latest", "earliest", "none"):
            raise ValueError("auto_offset_reset must be 'latest', 'earliest' or 'none'")
        self.group_id = group_id
        self.auto_offset_reset = auto_offset_reset
        self._cluster = Cluster(bootstrap, client_id=client_id, retries=retries,
                                retry_backoff_ms=retry_backoff_ms,
                                request_timeout_ms=request_timeout_ms,
                                lookup_poll_us=lookup_poll_us, security=security,
                                connect_timeout_ms=connect_timeout_ms)
        self._fetch_options = dict(max_wait_ms=fetch_max_wait_ms, min_bytes=fetch_min_bytes,
                                   max_bytes=fetch_max_bytes,
                                   max_partition_bytes=max_partition_fetch_bytes)
        self._deserialize = (key_deserializer, value_deserializer)
        self._states: dict[TopicPartition, PartitionState] = {}
        self._subscription: list[str] | None = list(topics) or None
        self._fetcher: Fetcher | None = None
        self._closed = False
        self.enable_auto_commit = enable_auto_commit
        self._auto_commit_s = auto_commit_interval_ms / 1000
        self._next_auto_commit = 0.0
        self._group_options = dict(heartbeat_interval_ms=heartbeat_interval_ms,
                                   max_poll_interval_ms=max_poll_interval_ms)
        self._membership: GroupMembership | None = None
        self._listener = None

    # ------------------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        await self._cluster.refresh_metadata()
        if self._subscription and self.group_id is not None:
            self.subscribe(self._subscription)
        await self._ensure_assignment()

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop fetching and close connections. Safe to call twice."""
        if self._closed:
            return
        if self._membership is not None:
            try:
                await self._run_listener(await self._leave_plan())
            except Exception:
                log.exception("giving up the partitions on close failed")
            await self._leave_group()
        self._closed = True
        if self._fetcher is not None:
            await self._fetcher.close()
        await self._cluster.close()

    @property
    def cluster(self) -> Cluster:
        """Package-internal: the metadata and connections of this consumer, which the
        blocking ``Consumer`` shares for lookups answered on its caller's thread."""
        return self._cluster

    def _fetch(self) -> Fetcher:
        if self._closed:
            raise ClientClosedError()
        if self._fetcher is None:
            self._fetcher = Fetcher(self._cluster, self._states, **self._fetch_options)
        return self._fetcher

    # ------------------------------------------------------------------------ assignment

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Read exactly these partitions (replaces any assignment or subscription)."""
        if self._membership is not None:
            raise ValueError("this consumer is a group member: unsubscribe() before assign()")
        self._subscription = None
        self._set_assignment({TopicPartition(*tp) for tp in partitions})

    def subscribe(self, topics: list[str] | None = None, *, pattern: str | None = None,
                  listener=None) -> None:
        """Read ``topics`` (or the topics whose whole name matches ``pattern``, checked again
        whenever metadata is refreshed). With a ``group_id``: join the group and read the
        partitions its coordinator hands out, telling ``listener`` (a
        ``ConsumerRebalanceListener``) inside ``poll``. Without: read every partition."""
        if (topics is None) == (pattern is None):
            raise ValueError("subscribe takes topics or a pattern")
        if isinstance(topics, str):
            topics = [topics]
        self._listener = listener
        if self.group_id is None:
            if pattern is not None:
                raise ValueError("subscribe(pattern=...) needs a group_id")
            self._subscription = list(topics)
            self._set_assignment(set())
            return
        self._subscription = None
        if self._membership is not None:
            self._membership.subscribe(topics, pattern)
            return
        self._set_assignment(set())
        self._membership = GroupMembership(self._cluster, self.group_id, topics=topics,
                                           pattern=pattern, on_change=self._wake_poll,
                                           **self._group_options)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # started by the first poll
        self._membership.start()

    async def unsubscribe(self) -> None:
        """Stop reading the subscription; a group member gives its partitions up (listener
        and auto-commit as in a rebalance) and leaves the group."""
        await self._run_listener(await self._leave_plan())
        await self._leave_group()
        self._subscription = None
        self._set_assignment(set())

    def _wake_poll(self) -> None:
        if self._fetcher is not None:
            self._fetcher.notify()

    def assignment(self) -> set[TopicPartition]:
        return set(self._states)

    def _set_assignment(self, partitions: set[TopicPartition]) -> None:
        for tp in list(self._states):
            if tp not in partitions:
                del self._states[tp]
                if self._fetcher is not None:
                    self._fetcher.drop(tp)
        for tp in partitions:
            self._states.setdefault(tp, PartitionState())
        if self._fetcher is not None:
            self._fetcher.notify()

    async def _ensure_assignment(self) -> None:
        if self._subscription and not self._states and self._membership is None:
            partitions = set()
            for topic in self._subscription:
                partitions.update(TopicPartition(topic, p)
                                  for p in await self._cluster.ensure_topic(topic))
            self._set_assignment(partitions)

    def _state(self, tp: TopicPartition) -> PartitionState:
        state = self._states.get(tp)
        if state is None:
            raise ValueError(f"{tp} is not assigned to this consumer")
        return state

    # ------------------------------------------------------------------------- positions

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Make the next poll of ``tp`` start at ``offset``."""
        if offset < 0:
            raise ValueError("offset must be >= 0")
        state = self._state(TopicPartition(*tp))
        state.position = state.fetch_offset = offset
        state.epoch += 1
        state.retry_at = 0.0
        if self._fetcher is not None:
            self._fetcher.drop(tp)
            self._fetcher.reset_needed.discard(tp)
            self._fetcher.notify()

    async def _seek_to(self, timestamp: int, partitions) -> None:
        tps = [TopicPartition(*tp) for tp in partitions] or list(self._states)
        offsets = await list_offsets(self._cluster, {tp: timestamp for tp in tps})
        for tp, found in offsets.items():
            self.seek(tp, found.offset if found is not None else 0)

    async def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        await self._ensure_assignment()
        await self._seek_to(EARLIEST_TIMESTAMP, partitions)

    async def seek_to_end(self, *partitions: TopicPartition) -> None:
        await self._ensure_assignment()
        await self._seek_to(LATEST_TIMESTAMP, partitions)

    async def seek_to_timestamp(self, timestamp_ms: int, timestamp_type: str = "append",
                                partitions=None) -> None:
        """Position each partition at its first record with time >= ``timestamp_ms``.

        Partitions with no such record are positioned at their end (only newer records will
        be read). ``timestamp_type`` "append" uses LogAppendTime, "create" CreateTime.
        """
        await self._ensure_assignment()
        tps = [TopicPartition(*tp) for tp in partitions] if partitions else list(self._states)
        found = await self.offsets_for_times({tp: timestamp_ms for tp in tps}, timestamp_type)
        missing = [tp for tp, value in found.items() if value is None]
        ends = await self.end_offsets(missing) if missing else {}
        for tp, value in found.items():
            self.seek(tp, value.offset if value is not None else ends[tp])

    async def offsets_for_times(self, timestamps: dict, timestamp_type: str = "append"
                                ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """{tp: first offset with time >= ts and its time}, None where no record qualifies."""
        for ts in timestamps.values():
            if not isinstance(ts, int) or ts < 0:
                raise ValueError("timestamps must be non-negative epoch milliseconds")
        return await list_offsets(self._cluster,
                                  {TopicPartition(*tp): ts for tp, ts in timestamps.items()},
                                  timestamp_type)

    async def end_offsets(self, partitions) -> dict[TopicPartition, int]:
        found = await list_offsets(self._cluster, {TopicPartition(*tp): LATEST_TIMESTAMP
                                                   for tp in partitions})
        return {tp: value.offset if value else 0 for tp, value in found.items()}

    async def beginning_offsets(self, partitions) -> dict[TopicPartition, int]:
        found = await list_offsets(self._cluster, {TopicPartition(*tp): EARLIEST_TIMESTAMP
                                                   for tp in partitions})
        return {tp: value.offset if value else 0 for tp, value in found.items()}

    async def position(self, tp: TopicPartition) -> int:
        """The offset of the next record ``poll`` will return for ``tp``."""
        tp = TopicPartition(*tp)
        state = self._state(tp)
        if state.position is None:
            await self._resolve_positions()
        return state.position

    async def _resolve_positions(self) -> None:
        """Committed offset, else the reset policy, for every partition without a position."""
        fetcher = self._fetch()
        for tp in fetcher.reset_needed:
            if tp in self._states:
                if self.auto_offset_reset == "none":
                    raise NoOffsetForPartitionError(f"{tp} position is out of range")
                self._states[tp].position = None
        fetcher.reset_needed.clear()
        unknown = [tp for tp, state in self._states.items() if state.position is None]
        if not unknown:
            return
        committed = await self._fetch_committed(unknown) if self.group_id else {}
        reset = [tp for tp in unknown if committed.get(tp) is None]
        if reset and self.auto_offset_reset == "none":
            raise NoOffsetForPartitionError(f"no committed offset for {reset}")
        timestamp = EARLIEST_TIMESTAMP if self.auto_offset_reset == "earliest" else LATEST_TIMESTAMP
        found = await list_offsets(self._cluster, {tp: timestamp for tp in reset}) if reset else {}
        for tp in unknown:
            offset = committed.get(tp)
            if offset is None:
                offset = found[tp].offset if found.get(tp) else 0
            self.seek(tp, offset)

    # ------------------------------------------------------------------------------ poll

    async def poll(self, timeout_ms: int = 0, max_records: int | None = None
                   ) -> list[ConsumerRecord]:
        """Records fetched since the last poll, waiting up to ``timeout_ms`` for some.

        Returns an empty list when nothing arrived in time. Raises the first non-retriable
        fetch error (e.g. ``CorruptMessageError``), once. A group member applies partition
        changes here first (rebalance listener, auto-commit).
        """
        return await self._poll_rebalancing(
            timeout_ms, lambda fetcher: self._drain(fetcher, max_records))

    async def poll_batches(self, timeout_ms: int = 0) -> list[ColumnBatch]:
        """Like ``poll``, but each fetched batch as columns (``ColumnBatch``), not records.

        No Python object is made per record, so this reads several times more records per
        second than ``poll``; deserializers are not applied. Positions advance past every
        returned batch, exactly as if ``poll`` had returned its records.
        """
        return await self._poll_rebalancing(timeout_ms, self._drain_columns)

    async def _poll_rebalancing(self, timeout_ms: int, drain) -> list:
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            change = await self._rebalance_begin()
            if change is not None:
                try:
                    await self._run_listener(change)
                finally:
                    self._rebalance_end(change)
            records = await self._poll(max(0.0, deadline - time.monotonic()) * 1000, drain)
            if records or time.monotonic() >= deadline:
                return records

    async def _poll(self, timeout_ms: float, drain) -> list:
        """One round of ``poll``; returns early (maybe empty) when the group's assignment
        changed, for the caller to apply it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        fetcher = self._fetch()
        await self._ensure_assignment()
        while True:
            if fetcher.reset_needed or any(s.position is None for s in self._states.values()):
                await self._resolve_positions()
            if any(self._cluster.leader_for(tp) is None for tp in self._states):
                await self._cluster.refresh_metadata_if_older(self._cluster.retry_backoff_ms)
            fetcher.ensure_loops()
            if fetcher.errors:
                raise fetcher.errors.popleft()
            if self._membership is not None:
                self._membership.raise_error()
            records = drain(fetcher)
            if records or (self._membership is not None and self._membership.plan()):
                return records
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            await fetcher.wait_changed(remaining)

    def _drain(self, fetcher: Fetcher, max_records: int | None) -> list[ConsumerRecord]:
        out: list[ConsumerRecord] = []
        consumed = False
        while fetcher.buffer and (max_records is None or len(out) < max_records):
            completed = fetcher.buffer[0]
            state = self._states.get(completed.tp)
            if state is not None and state.epoch == completed.epoch:
                limit = None if max_records is None else max_records - len(out)
                out.extend(completed.take(state, limit, self._deserialize))
                if not completed.exhausted:
                    break
            fetcher.buffer.popleft()
            consumed = True
        if consumed:
            fetcher.notify()  # room in the buffer: let the fetch loops run ahead again
        return out

    def _drain_columns(self, fetcher: Fetcher) -> list[ColumnBatch]:
        out: list[ColumnBatch] = []
        consumed = False
        while fetcher.buffer:
            completed = fetcher.buffer[0]
            state = self._states.get(completed.tp)
            if state is not None and state.epoch == completed.epoch:
                out.extend(completed.take_columns(state))
                if not completed.exhausted:
                    break  # a corrupt batch: the next poll raises
            fetcher.buffer.popleft()
            consumed = True
        if consumed:
            fetcher.notify()
        return out

    # ---------------------------------------------------------------------------- commit

    def _coordinator(self) -> int | None:
        """Offsets live with the controller; any broker if it is unknown."""
        controller = self._cluster.controller_id
        return controller if controller in self._cluster.brokers else None

    async def commit(self, offsets: dict | None = None) -> None:
        """Store ``offsets`` ({tp: next offset to read}), default: every current position."""
        if self.group_id is None:
            raise ValueError("commit needs a group_id")
        if offsets is None:
            offsets = self._positions()
        if not offsets:
            return
        entries = {TopicPartition(*tp): {"offset": int(getattr(o, "offset", o)), "metadata": ""}
                   for tp, o in offsets.items()}
        if self._membership is not None:
            await self._membership.commit(entries)
            return
        body = await self._cluster.request(self._coordinator(), ApiKey.OFFSET_COMMIT, {
            "group_id": self.group_id, "topics": group_by_topic(entries)})
        for topic in body["topics"]:
            for part in topic["partitions"]:
                if part["error_code"]:
                    raise error_for(part["error_code"])(
                        f"commit {topic['topic']}-{part['partition']}")

    def _positions(self, partitions=None) -> dict[TopicPartition, int]:
        return {tp: s.position for tp, s in self._states.items()
                if s.position is not None and (partitions is None or tp in partitions)}

    async def commit_async(self, offsets: dict | None = None, callback=None) -> asyncio.Task:
        """Start committing ``offsets`` (default: the current positions) and return the
        task at once; ``callback(offsets, exception_or_None)`` runs when it is done."""
        offsets = self._positions() if offsets is None else dict(offsets)
        task = asyncio.get_running_loop().create_task(self.commit(offsets))
        if callback is not None:
            task.add_done_callback(lambda t: callback(
                offsets, None if t.cancelled() else t.exception()))
        return task

    async def committed(self, tp: TopicPartition) -> int | None:
        """The group's committed offset for ``tp``, or None."""
        if self.group_id is None:
            raise ValueError("committed needs a group_id")
        tp = TopicPartition(*tp)
        return (await self._fetch_committed([tp])).get(tp)

    async def _fetch_committed(self, tps) -> dict[TopicPartition, int | None]:
        topics: dict[str, list] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = await self._cluster.request(self._coordinator(), ApiKey.OFFSET_FETCH, {
            "group_id": self.group_id,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]})
        result: dict[TopicPartition, int | None] = {}
        for topic in body["topics"]:
            for part in topic["partitions"]:
                tp = TopicPartition(topic["topic"], part["partition"])
                code = part["error_code"]
                if code and code != 3:  # unknown partition: nothing committed
                    raise error_for(code)(f"offset fetch {tp.topic}-{tp.partition}")
                result[tp] = part["offset"] if part["offset"] >= 0 and not code else None
        return result

    def highwater(self, tp: TopicPartition) -> int | None:
        """The last high watermark a fetch reported for ``tp`` (None before any fetch)."""
        state = self._state(TopicPartition(*tp))
        return state.high_watermark if state.high_watermark >= 0 else None


    # ---------------------------------------------------------- applying a group's changes
    # A separate step API (begin, listener calls, end) rather than one coroutine: the blocking
    # ``Consumer`` must run the user's rebalance listener on the user's thread, not on its
    # loop thread, so it calls ``_rebalance_begin`` and ``_rebalance_end`` on the loop and the
    # listener in between; ``poll`` here does the same three steps inline. In between, the
    # partitions being revoked are still readable and committable, and the newly assigned
    # ones are already assigned (the listener may ``seek`` them).

    async def _rebalance_begin(self) -> Rebalance | None:
        """At the start of a poll round: restart the poll timer, auto-commit when due, and
        take the pending change, if any; raises a fatal group error (e.g. the group is full).
        Revoked partitions' positions are committed first (with auto-commit)."""
        membership = self._membership
        if membership is None:
            return None
        membership.start()
        membership.polled()
        if (self.enable_auto_commit and membership.epoch > 0
                and time.monotonic() >= self._next_auto_commit):
            self._next_auto_commit = time.monotonic() + self._auto_commit_s
            await self._commit_quietly(membership.owned)
        change = membership.plan()
        if change is None:
            return None
        if change.revoked and self.enable_auto_commit:
            await self._commit_quietly(change.revoked)
        if change.assigned:
            self._set_assignment(set(self._states) | change.assigned)
        return change

    def _rebalance_end(self, change: Rebalance) -> None:
        """Stop reading what was revoked or lost; the next heartbeat reports it."""
        self._set_assignment(set(change.target))
        if self._membership is not None:
            self._membership.applied(change)

    def _listener_calls(self, change: Rebalance | None) -> list:
        """The listener methods to call for ``change``, with their partitions, in order."""
        listener = self._listener
        if listener is None or change is None:
            return []
        calls = [(listener.on_partitions_lost, change.lost),
                 (listener.on_partitions_revoked, change.revoked),
                 (listener.on_partitions_assigned, change.assigned)]
        return [(method, set(partitions)) for method, partitions in calls if partitions]

    async def _run_listener(self, change: Rebalance | None) -> None:
        for method, partitions in self._listener_calls(change):
            result = method(partitions)
            if inspect.isawaitable(result):
                await result

    async def _leave_plan(self) -> Rebalance | None:
        """Giving every partition up (close, unsubscribe): commit them with auto-commit and
        return the change for the listener; None when nothing is owned."""
        membership = self._membership
        if membership is None or not membership.owned:
            return None
        owned = membership.owned
        if self.enable_auto_commit:
            await self._commit_quietly(owned)
        return Rebalance(_NOTHING, owned, _NOTHING, _NOTHING)

    async def _leave_group(self) -> None:
        membership, self._membership = self._membership, None
        if membership is not None:
            await membership.leave()
            self._set_assignment(set())

    async def _commit_quietly(self, partitions) -> None:
        """Auto-commit: a failure is logged, not raised (the records after the last
        accepted commit are read again by whoever reads the partition next)."""
        offsets = self._positions(partitions)
        if not offsets:
            return
        try:
            await self.commit(offsets)
        except TslogError as exc:
            log.warning("group %r: auto-commit of %d partitions failed: %r",
                        self.group_id, len(offsets), exc)


__all__ = ["AsyncConsumer", "NoOffsetForPartitionError", "TslogError"]
