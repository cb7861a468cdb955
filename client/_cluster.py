"""What the client knows about the cluster: brokers, partition leaders, open connections.

Why one object: the producer, the consumer and the admin all need "send this to the leader of
that partition, and if the leader moved, find out where it went". ``Cluster`` owns the
metadata cache (refreshed on demand, when it ages out, or when a response says
NOT_LEADER/UNKNOWN_TOPIC), one ``Connection`` per broker (reopened lazily after a loss),
and the retry loop for requests that are safe to repeat.

Bootstrap addresses are only used to fetch metadata; afterwards requests go to the
``host:port`` each broker advertises. If every known broker is unreachable the bootstrap list
is tried again, so a client survives a single broker restarting on the same address.

Stale metadata (Kafka's KIP-320). A broker cut off from etcd answers Metadata from its last
copy, naming itself leader of partitions it no longer leads, so the cache never takes a
partition's entry from an answer with an older leader epoch than the one it holds, and a
broker that refused as not the leader, could not be reached, or answered stale is "suspect":
metadata is asked of the others first. Metadata requests rotate over the known brokers and
the bootstrap list, so one broker's view cannot hold the client for good. Metadata carries
no topic id, so a topic deleted and created again under the same name by another client
between two refreshes keeps its old (higher-epoch) entries here until they are outgrown or
the client restarts; a refresh that finds the topic gone forgets them.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ._connection import Connection
from ._types import PartitionInfo, TopicPartition
from .errors import (
    ClientClosedError,
    ConnectionLostError,
    RequestTimedOutError,
    TslogError,
    UnknownTopicOrPartitionError,
    error_for,
    refused,
)
from .security import Security

log = logging.getLogger(__name__)
# One WARNING when a broker stops answering connects and one when it answers again (not one
# per retry): what a tailing `tslog consume` shows on stderr, and what a service's logs need.
reachability_log = logging.getLogger("tslog.client.reachability")


def parse_bootstrap(bootstrap: str | list[str]) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` (or a list of such) -> [(host, port)], refusing bad entries."""
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    addresses = []
    for item in items:
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bootstrap address {item!r} is not host:port")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise ValueError("no bootstrap address given")
    return addresses


class Cluster:
    """Metadata cache + connection pool + retry policy, shared by one client object."""

    def __init__(self, bootstrap, *, client_id: str | None = "tslog-python",
                 request_timeout_ms: int = 30_000, retries: int = 5,
                 retry_backoff_ms: int = 100, retry_backoff_max_ms: int = 1000,
                 metadata_max_age_ms: int = 300_000, max_in_flight: int = 5,
                 connect_timeout_ms: int = 3_000, lookup_poll_us: int = 0,
                 security: Security | None = None) -> None:
        if not isinstance(lookup_poll_us, int) or not 0 <= lookup_poll_us <= 10_000:
            raise ValueError("lookup_poll_us must be an int from 0 (off) to 10000")
        if not isinstance(connect_timeout_ms, int) or connect_timeout_ms <= 0:
            raise ValueError("connect_timeout_ms must be a positive int")
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.retries = retries
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.metadata_max_age_ms = metadata_max_age_ms
        self.max_in_flight = max_in_flight
        self.connect_timeout_ms = connect_timeout_ms
        # One TLS context for every connection of this client (loading the files and the
        # trust store per connection would cost milliseconds each); a bad file fails here.
        self.security = security
        self.ssl_context = security.ssl_context() if security is not None else None
        # How long a time lookup polls for its answer before sleeping (_connection's doc).
        self.lookup_poll_s = lookup_poll_us / 1e6
        self.brokers: dict[int, tuple[str, int]] = {}
        self.controller_id = -1
        self.topics: dict[str, dict[int, PartitionInfo]] = {}
        self.topic_errors: dict[str, int] = {}
        # (host, port, lane) -> connection. Lanes keep a consumer's long-poll fetches from
        # delaying its commits and offset lookups: a broker answers one connection in order.
        self._connections: dict[tuple[str, int, str], Connection] = {}
        self._connecting: dict[tuple[str, int, str], asyncio.Task] = {}
        self._metadata_time = 0.0
        self._reached: set[tuple[str, int]] = set()  # connected to at least once
        self._unreachable: set[tuple[str, int]] = set()  # reported gone, not yet back
        # Refused as not the leader, unreachable or stale, since it last served a request
        # other than Metadata: asked for metadata after the others.
        self._suspects: set[tuple[str, int]] = set()
        self._rotation = 0  # which broker the next Metadata request starts from
        self._refresh: asyncio.Task | None = None
        self._closed = False

    # ------------------------------------------------------------------------- metadata

    def leader_for(self, tp: TopicPartition) -> int | None:
        info = self.topics.get(tp.topic, {}).get(tp.partition)
        if info is None or info.leader < 0 or info.leader not in self.brokers:
            return None
        return info.leader

    def partitions_for(self, topic: str) -> list[int] | None:
        partitions = self.topics.get(topic)
        return sorted(partitions) if partitions else None

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has (0 if unknown); the producer's per-record lookup."""
        partitions = self.topics.get(topic)
        return len(partitions) if partitions else 0

    def metadata_age_s(self) -> float:
        return time.monotonic() - self._metadata_time

    def is_suspect(self, node_id: int) -> bool:
        """``node_id`` failed as a leader (see ``suspect``) and has not served since."""
        return self.brokers.get(node_id) in self._suspects

    def metadata_stale(self) -> bool:
        age_ms = (time.monotonic() - self._metadata_time) * 1000
        return age_ms > self.metadata_max_age_ms

    async def refresh_metadata_if_older(self, age_ms: float) -> None:
        """Refresh unless the metadata is younger than ``age_ms`` (rate-limits lookups)."""
        if (time.monotonic() - self._metadata_time) * 1000 >= age_ms:
            await self.refresh_metadata()

    async def refresh_metadata(self) -> None:
        """Fetch metadata for every topic; concurrent callers share one request."""
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._fetch_metadata())
        await asyncio.shield(self._refresh)

    async def _fetch_metadata(self) -> None:
        address, body = await self.ask_metadata({"topics": None})
        stale = self._merge_metadata(body)
        if stale:
            self._suspects.add(address)
            log.debug("metadata from %s:%d is older than the cache for %d partitions",
                      *address, stale)
        self._metadata_time = time.monotonic()

    def _merge_metadata(self, body: dict) -> int:
        """Take ``body`` into the cache, except partitions it names with an older leader
        epoch than the cache holds (KIP-320); returns how many it kept from the cache."""
        brokers = {b["node_id"]: (b["host"], b["port"]) for b in body["brokers"]}
        topics, errors, stale = {}, {}, 0
        for topic in body["topics"]:
            name = topic["topic"]
            errors[name] = topic["error_code"]
            known = self.topics.get(name, {})
            partitions = topics[name] = {}
            for p in topic["partitions"]:
                info = PartitionInfo(p["partition"], p["leader"], p["leader_epoch"],
                                     p["replicas"], p["isr"], p["error_code"])
                old = known.get(info.partition)
                if old is not None and info.leader_epoch < old.leader_epoch:
                    info, stale = old, stale + 1
                    if old.leader in self.brokers and old.leader not in brokers:
                        brokers[old.leader] = self.brokers[old.leader]
                partitions[info.partition] = info
        self.brokers = brokers
        self.controller_id = body["controller_id"]
        self.topics, self.topic_errors = topics, errors
        return stale

    def suspect(self, node_id: int) -> None:
        """``node_id`` refused as not the leader, or could not be reached or answered in
        time: ask the other brokers for metadata first, since it may answer from a stale
        copy (a leader cut off from etcd names itself leader)."""
        address = self.brokers.get(node_id)
        if address is not None:
            self._suspects.add(address)

    def vouch(self, node_id: int) -> None:
        """``node_id`` served a request as a leader should: no longer suspect."""
        self._suspects.discard(self.brokers.get(node_id))

    @property
    def suspects(self) -> frozenset[tuple[str, int]]:
        """Addresses asked for metadata after the others (see ``suspect``)."""
        return frozenset(self._suspects)

    def _metadata_order(self) -> list[tuple[str, int]]:
        """Where to ask for metadata, in order: a different starting broker each time
        (round robin over the known brokers and the bootstrap list), brokers with an open
        connection first (no connect to wait for), suspects last."""
        addresses = list(dict.fromkeys([*sorted(self.brokers.values()), *self.bootstrap]))
        self._rotation = (self._rotation + 1) % len(addresses)
        addresses = addresses[self._rotation:] + addresses[:self._rotation]

        def rank(address: tuple[str, int]) -> tuple[bool, bool]:
            conn = self._connections.get((*address, "default"))
            return address in self._suspects, conn is None or conn.closed
        return sorted(addresses, key=rank)

    async def ask_metadata(self, body: dict) -> tuple[tuple[str, int], dict]:
        """Send a Metadata request to the first broker of ``_metadata_order`` that answers;
        returns (its address, the answer). A broker that fails becomes suspect and the next
        one is asked; the whole list is tried ``retries`` + 1 times, with backoff."""
        attempt = 0
        while True:
            last_error: TslogError | None = None
            for address in self._metadata_order():
                try:
                    conn = await self._connect(address)
                    return address, await conn.send(ApiKey.METADATA, body,
                                                    timeout_ms=self.request_timeout_ms)
                except TslogError as exc:
                    if not exc.retriable or self._closed:
                        raise
                    self._suspects.add(address)
                    last_error = exc
                    log.debug("metadata from %s:%d failed: %r", *address, exc)
            if attempt >= self.retries:
                raise last_error or ConnectionLostError("no broker reachable")
            await asyncio.sleep(self.backoff_s(attempt))
            attempt += 1

    async def ensure_topic(self, topic: str) -> list[int]:
        """Partitions of ``topic``, refreshing metadata once if it is unknown.

        Raises:
            UnknownTopicOrPartitionError: the broker does not know the topic.
            TopicAuthorizationFailedError: this client may not see it (``missing_topic``).
        """
        partitions = self.partitions_for(topic)
        if partitions is None or self.metadata_stale():
            await self.refresh_metadata()
            partitions = self.partitions_for(topic)
        if partitions is None:
            raise await self.missing_topic(topic)
        return partitions

    async def missing_topic(self, topic: str) -> TslogError:
        """Why ``topic`` is not in the metadata: a full listing leaves out the topics this
        client may not describe, so asked by name the broker says TOPIC_AUTHORIZATION_FAILED
        for those (existing or not), and "does not exist" stays for the rest."""
        _, body = await self.ask_metadata({"topics": [topic]})
        code = next((t["error_code"] for t in body["topics"] if t["topic"] == topic), 0)
        if code and code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return refused(code, f"topic {topic!r}")
        return UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")

    # ---------------------------------------------------------------------- connections

    def open_connection(self, node_id: int, lane: str = "default") -> Connection | None:
        """The open connection to ``node_id`` if there is one (never connects)."""
        address = self.brokers.get(node_id)
        conn = self._connections.get((*address, lane)) if address else None
        return conn if conn is not None and not conn.closed else None

    async def connection(self, node_id: int | None, lane: str = "default") -> Connection:
        """An open connection to ``node_id`` (None: any broker, bootstrap if need be)."""
        if self._closed:
            raise ClientClosedError()
        if node_id is not None:
            address = self.brokers.get(node_id)
            if address is None:
                raise error_for(8)(f"broker {node_id} is not in the metadata")
            return await self._connect(address, lane)
        for key, conn in self._connections.items():
            if key[2] == "default" and not conn.closed:
                return conn
        candidates = list(self.brokers.values())
        random.shuffle(candidates)
        candidates += [a for a in self.bootstrap if a not in candidates]
        last_error: Exception | None = None
        for address in candidates:
            try:
                return await self._connect(address)
            except ConnectionLostError as exc:
                last_error = exc
        raise last_error or ConnectionLostError("no broker reachable")

    async def _connect(self, address: tuple[str, int], lane: str = "default") -> Connection:
        key = (*address, lane)
        conn = self._connections.get(key)
        if conn is not None and not conn.closed:
            return conn
        task = self._connecting.get(key)
        if task is None:
            task = asyncio.ensure_future(Connection.open(
                *address, client_id=self.client_id, max_in_flight=self.max_in_flight,
                timeout_ms=self.connect_timeout_ms, security=self.security,
                ssl_context=self.ssl_context))
            self._connecting[key] = task
            task.add_done_callback(lambda _: self._connecting.pop(key, None))
        try:
            conn = await asyncio.shield(task)
        except ConnectionLostError as exc:
            self._suspects.add(address)
            if (address in self._reached and address not in self._unreachable
                    and not self._closed):  # gone, after working: a first failure raises
                self._unreachable.add(address)
                reachability_log.warning("broker %s:%d is unreachable (%s); retrying",
                                         *address, _reason(exc))
            raise
        self._reached.add(address)
        if address in self._unreachable:
            self._unreachable.discard(address)
            reachability_log.warning("broker %s:%d is reachable again", *address)
        if self._closed:
            conn.close()
            raise ClientClosedError()
        self._connections[key] = conn
        return conn

    def backoff_s(self, attempt: int) -> float:
        """Exponential backoff with jitter, so many clients do not retry in lockstep."""
        delay_ms = min(self.retry_backoff_ms * 2 ** attempt, self.retry_backoff_max_ms)
        return delay_ms * random.uniform(0.8, 1.2) / 1000

    async def request(self, node_id: int | None, api_key: int, body: dict, *,
                      timeout_ms: int | None = None, poll: bool = False,
                      api_version: int = 0) -> dict:
        """Send to a broker and return the response body, retrying retriable errors.

        Only for requests that are safe to repeat (metadata, offsets, admin reads); the
        producer runs its own loop because a retried produce may duplicate records.
        ``poll``: a time lookup, which polls for its answer for ``lookup_poll_s``.
        """
        attempt = 0
        while True:
            try:
                address = self.brokers.get(node_id) if node_id is not None else None
                conn = self._connections.get((*address, "default")) if address else None
                if conn is None or conn.closed or self._closed:
                    conn = await self.connection(node_id)
                answer = await conn.send(api_key, body, api_version=api_version,
                                         timeout_ms=timeout_ms or self.request_timeout_ms,
                                         poll_s=self.lookup_poll_s if poll else 0.0)
                if node_id is not None:
                    self.vouch(node_id)
                return answer
            except TslogError as exc:
                if node_id is not None and failed_as_leader(exc):
                    self.suspect(node_id)
                if not exc.retriable or attempt >= self.retries or self._closed:
                    raise
                log.debug("retrying api %s after %r", api_key, exc)
            await asyncio.sleep(self.backoff_s(attempt))
            attempt += 1

    async def request_leader(self, tp: TopicPartition, api_key: int, body: dict, *,
                             timeout_ms: int | None = None) -> tuple[int, dict]:
        """Send to the current leader of ``tp``; returns (node_id, body)."""
        node_id = self.leader_for(tp)
        if node_id is None:
            await self.refresh_metadata()
            node_id = self.leader_for(tp)
            if node_id is None:
                code = self.topic_errors.get(tp.topic, 3) or 5
                raise error_for(code)(f"no leader known for {tp.topic}-{tp.partition}")
        return node_id, await self.request(node_id, api_key, body, timeout_ms=timeout_ms)

    async def close(self) -> None:
        self._closed = True
        for task in list(self._connecting.values()):
            task.cancel()
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
        if self._refresh is not None and not self._refresh.done():
            self._refresh.cancel()


def failed_as_leader(error: BaseException) -> bool:
    """A broker's failure that says the client's metadata may be wrong about it: it refused
    as not the leader, its connection was lost, or it did not answer in time."""
    return isinstance(error, RequestTimedOutError) or bool(
        getattr(error, "invalid_metadata", False))


def _reason(error: ConnectionLostError) -> str:
    """Why a connect failed, in words: the OS's reason rather than an exception repr."""
    cause = error.__cause__
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror.lower()
    if isinstance(cause, (asyncio.TimeoutError, TimeoutError)):
        return "timed out"
    return str(error)
