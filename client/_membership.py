"""A consumer's membership in a group: heartbeats, the assignment, commits with its epoch.

Why a background task: the coordinator (docs/groups.md) removes a member that is silent for
its session timeout, so heartbeats must go on while user code runs between polls. The task
only talks to the coordinator and records what it was told; the consumer applies a change
(``Rebalance``) inside ``poll``, where the user's rebalance listener runs, and only then does
the member report, in its next heartbeat, that it gave partitions up. So a partition is given
up only after its offsets were committed and the listener saw it go.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ._cluster import Cluster
from ._group_coordinator import MOVED, GroupCoordinators
from ._offsets import group_by_topic
from ._types import TopicPartition
from .errors import TslogError, error_for, refused

log = logging.getLogger("tslog.client.groups")

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
# The member is not (or no longer) in the group: its partitions are lost, it joins again.
GONE = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH,
                  ErrorCode.GROUP_ID_NOT_FOUND})


class ConsumerRebalanceListener:
    """Told, inside ``poll``, which partitions this consumer stops and starts reading.

    ``on_partitions_revoked`` runs before a partition moves to another member (its offsets
    are committed first when auto-commit is on, and the consumer may still commit in it);
    ``on_partitions_lost`` when the member was removed from the group (fenced, session
    expired, ``max_poll_interval_ms`` passed), so another member may already read them and a
    commit would be refused; by default it calls ``on_partitions_revoked``.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Called with the partitions this consumer gives up (never with an empty set)."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """Called with the partitions this consumer starts reading."""

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.on_partitions_revoked(lost)


@dataclass(frozen=True)
class Rebalance:
    """One change of what the consumer reads, applied in ``poll``."""

    lost: frozenset
    revoked: frozenset
    assigned: frozenset
    target: frozenset  # what the consumer reads afterwards
    removed: bool = False  # the member was removed: it joins again afterwards


def _pairs(groups) -> frozenset:
    return frozenset(TopicPartition(g["topic"], p) for g in groups or [] for p in g["partitions"])


def _by_topic(partitions) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        topics.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": topic, "partitions": parts} for topic, parts in topics.items()]


def commit_codes(answer: dict) -> list[int]:
    return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]


# Denials of a heartbeat: the group (Read), or a subscribed topic (Describe).
DENIED = frozenset({ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED})


class GroupMembership:
    """Owner: the consumer's event loop. ``start`` it once a loop runs; ``leave`` to stop."""

    def __init__(self, cluster: Cluster, group_id: str, *, topics=None, pattern=None,
                 heartbeat_interval_ms: int | None, max_poll_interval_ms: int,
                 on_change) -> None:
        self._cluster = cluster
        self._coordinators = GroupCoordinators(cluster)
        self.group_id = group_id
        self.topics = sorted(set(topics or ()))
        self.pattern = re.compile(pattern) if pattern is not None else None
        self._interval_cap_s = None if heartbeat_interval_ms is None else heartbeat_interval_ms / 1000
        self._interval_s = self._interval_cap_s or 3.0  # until the coordinator says
        self._max_poll_s = max_poll_interval_ms / 1000
        self._on_change = on_change
        self.member_id = ""
        self.epoch = JOIN_EPOCH
        self.owned: frozenset = frozenset()  # what the consumer reads, as it last confirmed
        self._target: frozenset | None = None  # the coordinator's last assignment
        self._lost = False  # removed from the group: the consumer must drop all, then rejoin
        self._sent_topics: list[str] | None = None
        self.error: TslogError | None = None  # a fatal error, raised by the next poll
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._last_poll = time.monotonic()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """Start heartbeating (again, after a refusal that ``polled`` raised: e.g. a full
        group is asked again at the next poll)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(),
                                                                name="tslog-heartbeat")

    # ----------------------------------------------------------------- the consumer's side

    def polled(self) -> None:
        """The user called poll: the poll timer starts again (and a member that left
        because it did not poll joins again)."""
        now = time.monotonic()
        if now >= self._last_poll + self._max_poll_s:
            self._wake.set()  # the heartbeat task waits for this poll
        self._last_poll = now
        self.raise_error()

    def raise_error(self) -> None:
        """Raise (once) the fatal error the heartbeat task met, e.g. a denial of a subscribed
        topic: a poll waiting for its first assignment raises it as soon as it arrives."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def plan(self) -> Rebalance | None:
        """The change the consumer has to apply now, if any."""
        empty = frozenset()
        if self._lost:
            return Rebalance(self.owned, empty, empty, empty, removed=True)
        if self._target is None or self._target == self.owned:
            return None
        return Rebalance(empty, self.owned - self._target, self._target - self.owned,
                         self._target)

    def applied(self, change: Rebalance) -> None:
        """The consumer reads ``change.target`` now; report it in a heartbeat at once."""
        self.owned = change.target
        if change.removed:
            self._lost = False
            self._target = None
        self._wake.set()

    def subscribe(self, topics=None, pattern=None) -> None:
        self.topics = sorted(set(topics or ()))
        self.pattern = re.compile(pattern) if pattern is not None else None
        self._wake.set()

    # ---------------------------------------------------------------------- heartbeats

    def _subscription(self) -> list[str]:
        if self.pattern is None:
            return self.topics
        return sorted(t for t in self._cluster.topics if self.pattern.fullmatch(t))

    async def _run(self) -> None:
        attempt = 0
        while True:
            self._wake.clear()
            poll_due = self._last_poll + self._max_poll_s
            if time.monotonic() >= poll_due and self.epoch > 0 and not self._lost:
                log.warning("group %r: poll() not called for %.0f s (max_poll_interval_ms); "
                            "leaving the group", self.group_id, self._max_poll_s)
                await self._leave_quietly()
                self._lose()
            if self._lost or time.monotonic() >= poll_due:
                await self._wake.wait()  # until poll() dropped the partitions / polled again
                continue
            try:
                await self.heartbeat()
                attempt = 0
                delay = self._interval_s
            except asyncio.CancelledError:
                raise
            except TslogError as exc:
                if not exc.retriable:
                    self.error = exc
                    self._on_change()
                    return
                log.debug("group %r: heartbeat failed: %r", self.group_id, exc)
                delay = self._cluster.backoff_s(attempt)
                attempt += 1
            except Exception as exc:  # a bug: stop, and let the next poll raise it
                log.exception("group %r: heartbeat failed", self.group_id)
                self.error = exc
                self._on_change()
                return
            try:
                await asyncio.wait_for(self._wake.wait(),
                                       max(0.0, min(delay, poll_due - time.monotonic())))
            except asyncio.TimeoutError:
                pass

    async def heartbeat(self) -> None:
        """One heartbeat now; records the answer (a new assignment, or the member's removal).

        Raises the connection's error or a refusal's (e.g. GroupMaxSizeReachedError);
        retriable ones (the coordinator moved, the connection broke) are retried by the
        heartbeat task."""
        async with self._lock:
            if self._lost:
                return
            if self.pattern is not None:
                await self._cluster.refresh_metadata_if_older(max(1000, self._interval_s * 1000))
            topics = self._subscription()
            joining = self.epoch == JOIN_EPOCH
            body = {"group_id": self.group_id, "member_id": self.member_id,
                    "member_epoch": self.epoch,
                    "subscribed_topics": topics if joining or topics != self._sent_topics
                    else None,
                    "owned": [] if joining else _by_topic(self.owned)}
            try:
                # A refused heartbeat's code is top-level: the connection raises it.
                answer = await self._coordinators.request(
                    self.group_id, ApiKey.CONSUMER_GROUP_HEARTBEAT, body,
                    lambda a: [a["error_code"]])
            except TslogError as exc:
                if exc.error_code in GONE:
                    log.info("group %r: member %s is no longer in the group (%s); rejoining",
                             self.group_id, self.member_id, exc.error_code.name)
                    self._lose()
                    return
                if exc.error_code in MOVED:  # ask FindCoordinator again on the next try
                    self._coordinators.forget(self.group_id)
                if exc.error_code in DENIED:  # name what was denied, not just the code
                    raise refused(exc.error_code, f"group {self.group_id!r} subscribed to "
                                  f"{', '.join(map(repr, topics))}") from None
                raise
            self._sent_topics = topics
            self.member_id = answer["member_id"]
            self.epoch = answer["member_epoch"]
            told = answer["heartbeat_interval_ms"] / 1000
            if told > 0:
                self._interval_s = min(told, self._interval_cap_s or told)
            if answer["assignment"] is not None:
                target = _pairs(answer["assignment"])
                if target != self._target:
                    self._target = target
                    if target != self.owned:
                        self._on_change()

    def _lose(self) -> None:
        """Removed from the group: everything owned is lost; join again with epoch 0 once
        the consumer dropped it (Kafka lets a member keep its id)."""
        self._lost = True
        self._target = None
        self.epoch = JOIN_EPOCH
        self._on_change()

    async def _leave_quietly(self) -> None:
        try:
            await self._coordinators.request(self.group_id, ApiKey.CONSUMER_GROUP_HEARTBEAT, {
                "group_id": self.group_id, "member_id": self.member_id,
                "member_epoch": LEAVE_EPOCH, "subscribed_topics": None, "owned": None},
                lambda a: [a["error_code"]])
        except TslogError as exc:
            log.info("group %r: leaving failed (%r); the session timeout removes the member",
                     self.group_id, exc)

    async def leave(self) -> None:
        """Stop heartbeating and leave the group (epoch -1), so its partitions move at once."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        async with self._lock:
            if self.member_id and self.epoch > 0:
                await self._leave_quietly()
            self.epoch = JOIN_EPOCH
            self.owned = frozenset()
            self._target = None

    # -------------------------------------------------------------------------- commits

    async def commit(self, entries: dict[TopicPartition, dict]) -> None:
        """OffsetCommit v1 with this member's id and epoch. A stale epoch: heartbeat, then
        try once more. Raises the typed error of a commit that cannot succeed (e.g.
        UnknownMemberIdError once the member was removed; its partitions are then lost)."""
        for attempt in range(2):
            member_id, epoch = (self.member_id, self.epoch) if self.epoch > 0 else ("", -1)
            answer = await self._coordinators.request(self.group_id, ApiKey.OFFSET_COMMIT, {
                "group_id": self.group_id, "member_id": member_id, "member_epoch": epoch,
                "topics": group_by_topic(entries)}, commit_codes, api_version=1)
            codes = commit_codes(answer)
            if ErrorCode.STALE_MEMBER_EPOCH in codes and attempt == 0:
                await self.heartbeat()
                continue
            if epoch > 0 and any(code in GONE for code in codes):
                self._lose()
            for topic in answer["topics"]:
                for part in topic["partitions"]:
                    if part["error_code"]:
                        raise error_for(part["error_code"])(
                            f"commit {topic['topic']}-{part['partition']} in group "
                            f"{self.group_id!r}")
            return
