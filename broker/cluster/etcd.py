"""The only module that talks to etcd: a small asyncio client over ``aetcd`` (etcd's v3 gRPC API).

Why a wrapper: the rest of the control plane speaks in a handful of operations (a lease, a
prefix snapshot with its revision, a watch from a revision, a compare-and-swap transaction)
and in plain values (``KeyValue`` with str keys and revisions). Keeping aetcd's types and
exceptions in here means a change of client library touches one file, and every failure to
reach etcd surfaces as one exception type, ``EtcdError``.

Transactions are built from the helpers below: compares (``absent``, ``exists``, ``mod_is``,
``created_at``) and operations (``put``, ``delete``, ``delete_prefix``). TLS to etcd is the
one thing aetcd lacks; ``etcd_tls.py`` (used only from here) adds it.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from typing import Any, Awaitable, Callable, NamedTuple

import aetcd
from aetcd import utils as aetcd_utils

from .errors import EtcdError
from .etcd_tls import EtcdTls, TlsClient

log = logging.getLogger("tslog.broker.cluster.etcd")

CLOSE_TIMEOUT_S = 1.0
# gRPC backs reconnects off up to 2 minutes by default: long after etcd is back, a broker
# would still not reach it and lose its lease. Retry at least every second instead.
_CHANNEL_OPTIONS = {
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
}


class KeyValue(NamedTuple):
    key: str
    value: bytes
    mod_revision: int
    create_revision: int
    lease: int


class WatchEvent(NamedTuple):
    deleted: bool  # True for a DELETE (value empty), False for a PUT
    kv: KeyValue


def _kv(raw) -> KeyValue:
    return KeyValue(raw.key.decode(), bytes(raw.value), raw.mod_revision, raw.create_revision,
                    getattr(raw, "lease", 0))


def _target(addresses: list[tuple[str, int]]) -> tuple[str, int]:
    """(host, port) for aetcd, which dials ``f"{host}:{port}"``. Several endpoints become one
    gRPC ``ipv4:``/``ipv6:`` target (config guarantees IP literals), so gRPC fails over."""
    if len(addresses) == 1:
        return addresses[0]
    scheme = "ipv6" if ":" in addresses[0][0] else "ipv4"
    parts = [f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in addresses]
    last_host, last_port = addresses[-1]
    head = ",".join(parts[:-1] + [f"[{last_host}]" if ":" in last_host else last_host])
    return f"{scheme}:{head}", last_port


class Etcd:
    """One connection (gRPC channel) to an etcd cluster."""

    def __init__(self, addresses: list[tuple[str, int]], timeout_s: float = 5.0,
                 tls: EtcdTls | None = None) -> None:
        """``tls``: talk to etcd over TLS (``etcd_tls.py``); raises EtcdError if its files
        cannot be read."""
        host, port = _target(addresses)
        self.addresses = addresses
        kwargs = dict(host=host, port=port, timeout=timeout_s, options=_CHANNEL_OPTIONS)
        self._client = (aetcd.Client(**kwargs) if tls is None
                        else TlsClient(tls, server_name=addresses[0][0], **kwargs))
        self._tx = self._client.transactions

    async def connect(self) -> None:
        await self._call(self._client.connect())

    async def close(self) -> None:
        """Close the channel. aetcd's own close first shuts its watch stream down, which can
        wait forever on a stream etcd dropped; after a short wait the channel is closed
        directly, which ends every call and stream on it."""
        try:
            await asyncio.wait_for(self._client.close(), CLOSE_TIMEOUT_S)
        except asyncio.TimeoutError:
            channel = self._client.channel
            if channel is not None:
                await channel.close()
        except Exception as exc:  # closing a broken channel must not mask the real error
            log.debug("closing the etcd client: %r", exc)

    async def _call(self, awaitable: Awaitable) -> Any:
        try:
            return await awaitable
        except aetcd.ClientError as exc:
            raise EtcdError(f"etcd at {self.addresses}: {type(exc).__name__} {exc}") from None
        except asyncio.TimeoutError:
            raise EtcdError(f"etcd at {self.addresses} did not answer in time") from None

    # -- leases ----------------------------------------------------------------------------

    async def grant_lease(self, ttl_s: int) -> tuple[int, int]:
        """A new lease; returns (lease id, granted TTL in seconds)."""
        lease = await self._call(self._client.lease(ttl_s))
        return lease.id, lease.ttl

    async def keep_alive(self, lease_id: int) -> int:
        """Refresh a lease once; return its remaining TTL (<= 0: it has expired)."""
        reply = await self._call(self._client.refresh_lease(lease_id))
        return reply.TTL if reply is not None else 0

    async def revoke_lease(self, lease_id: int) -> None:
        await self._call(self._client.revoke_lease(lease_id))

    # -- reads -----------------------------------------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        raw = await self._call(self._client.get(key.encode()))
        return None if raw is None else _kv(raw)

    async def get_prefix(self, prefix: str) -> tuple[int, list[KeyValue]]:
        """Every key under ``prefix`` and the store revision they were read at."""
        result = await self._call(self._client.get_prefix(prefix.encode()))
        return result.header.revision, [_kv(raw) for raw in result]

    # -- transactions ----------------------------------------------------------------------

    def absent(self, key: str):
        return self._tx.create(key.encode()) == 0

    def exists(self, key: str):
        return self._tx.create(key.encode()) > 0

    def mod_is(self, key: str, revision: int):
        return self._tx.mod(key.encode()) == revision

    def created_at(self, key: str, revision: int):
        return self._tx.create(key.encode()) == revision

    def put(self, key: str, value: bytes, lease: int | None = None):
        return self._tx.put(key.encode(), value, lease=lease)

    def delete(self, key: str):
        return self._tx.delete(key.encode())

    def delete_prefix(self, prefix: str):
        raw = prefix.encode()
        return self._tx.delete(raw, range_end=aetcd_utils.prefix_range_end(raw))

    async def txn(self, compares: list, success: list) -> tuple[bool, int]:
        """Apply ``success`` atomically if every compare holds.

        Returns:
            (succeeded, the revision the writes created; 0 if nothing was written).
        """
        ok, responses = await self._call(self._client.transaction(compare=compares,
                                                                  success=success, failure=[]))
        revision = 0
        for response in responses if ok else ():
            kind = response.WhichOneof("response")
            revision = max(revision, getattr(response, kind).header.revision)
        return ok, revision

    # -- watches ---------------------------------------------------------------------------

    async def watch_prefix(self, prefix: str, start_revision: int,
                           on_event: Callable[[WatchEvent], None]) -> None:
        """Call ``on_event`` for every change under ``prefix`` from ``start_revision`` on, in
        revision order, until cancelled. Raises EtcdError when the stream breaks (the caller
        re-reads a snapshot and watches again)."""
        watch = await self._call(self._client.watch_prefix(prefix.encode(),
                                                           start_revision=start_revision))
        try:
            iterator = watch.__aiter__()
            while True:
                try:
                    event = await iterator.__anext__()
                except StopAsyncIteration:
                    raise EtcdError("the etcd watch stream ended") from None
                except Exception as exc:  # aetcd hands over whatever broke the stream
                    raise EtcdError(f"the etcd watch broke: {type(exc).__name__} {exc}") \
                        from None
                on_event(WatchEvent(event.kind == aetcd.EventKind.DELETE, _kv(event.kv)))
        finally:
            try:  # bounded: on a dropped stream aetcd's cancel request may never be taken
                await asyncio.wait_for(watch.cancel(), CLOSE_TIMEOUT_S)
            except Exception as exc:
                log.debug("cancelling an etcd watch: %r", exc)


async def follow_prefix(etcd: Etcd, prefix: str, revision: int,
                        on_event: Callable[[WatchEvent], None],
                        resync: Callable[[], Awaitable[int]], what: str,
                        resync_delay_s: float = 0.5) -> None:
    """Deliver every change under ``prefix`` after ``revision`` to ``on_event``, forever: when
    the watch breaks, wait, take a fresh snapshot with ``resync`` (which returns its
    revision) and watch again from there, so a cache built on it never misses a change."""
    while True:
        try:
            await etcd.watch_prefix(prefix, revision + 1, on_event)
        except EtcdError as exc:
            log.warning("etcd watch of %s interrupted: %s; re-reading it", what, exc)
        while True:
            await asyncio.sleep(resync_delay_s)
            try:
                revision = await resync()
                break
            except EtcdError as exc:
                log.warning("etcd unreachable (%s): %s", what, exc)


class PrefixFollower(abc.ABC):
    """A cache of one etcd prefix kept current: ``start`` takes the snapshot (the subclass's
    ``_resync``, returning its revision) and follows every change after it into
    ``_on_event`` (``follow_prefix``); ``close`` stops following. The ACL and credential
    stores are such caches; this is what they share."""

    etcd: Etcd
    prefix: str
    what = "a prefix"  # how the log names it when the watch breaks
    _task: asyncio.Task | None = None

    @abc.abstractmethod
    async def _resync(self) -> int:
        """Replace the cache with the prefix as it is now; return that revision."""

    @abc.abstractmethod
    def _on_event(self, event: WatchEvent) -> None:
        """Apply one change under the prefix to the cache."""

    async def start(self) -> None:
        """Load the prefix and follow its changes. Raises EtcdError."""
        revision = await self._resync()
        self._task = asyncio.get_running_loop().create_task(
            follow_prefix(self.etcd, self.prefix, revision, self._on_event, self._resync,
                          self.what))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
