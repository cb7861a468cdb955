"""A broker's etcd session seen from inside: when its leadership may be in doubt, and how a
peer's dead process is confirmed and its session ended early.

Why ``LeaseClock``: a leader's right to acknowledge rests on its lease. Once the lease may
have expired, the controller may already have elected another leader, so anything this
broker acknowledges after that moment could be lost or forked. etcd starts a renewal's TTL
when it processes the keep-alive, which is after we sent it; so the lease lives at least
until ``sent + TTL`` by this machine's monotonic clock (which no wall-clock step moves and
which keeps counting while the process is stopped). The clock answers "valid" only until
``sent + TTL - margin`` after the last renewal that etcd confirmed: a leader paused past its
lease, or cut off from etcd, stops acknowledging before the lease can have lapsed, and a
deposed leader that wakes up finds its clock already past it and refuses before it has
heard anything from etcd.

Why ``DeadPeers``: the lease is a slow detector (``broker_session_timeout_ms``, 10 s by
default). A broker whose process died closes its sockets, and its port then refuses new
connections, which a live but paused or cut-off broker never does (its kernel keeps the
listening socket, or the packets are lost). So a follower whose leader's port refuses a
connection reports it here; the broker confirms with probes of its own, checks in etcd that
the registration at that address is still the same lease, and revokes that lease. The
registration (and a controller key) goes with it and the controller's usual failover runs
at once. Anything short of a refused connection (timeouts, resets of a live peer) is left
to the lease, and so is a registration younger than two seconds: a starting broker
registers a moment before its listener is bound.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from .errors import EtcdError

log = logging.getLogger("tslog.broker.cluster")

PROBES = 3  # consecutive refused connections that confirm a dead process
PROBE_GAP_S = 0.05
PROBE_TIMEOUT_S = 1.0
# A broker registers a moment before its listener is bound: a registration this young is
# left to its lease, or a starting broker's refused port would end its brand-new session.
YOUNG_REGISTRATION_S = 2.0


def lease_margin_s(ttl_s: float) -> float:
    """How long before the lease's earliest expiry a leader stops acknowledging: a quarter
    of the TTL, at most a second (room for a slow event-loop turn between the check and the
    answer's write)."""
    return min(1.0, ttl_s / 4)


class LeaseClock:
    """Until when (monotonic seconds) this broker's lease is surely alive."""

    def __init__(self) -> None:
        self.valid_until = 0.0
        self.renewed_at = 0.0  # monotonic send time of the last confirmed renewal

    def renewed(self, sent_at: float, ttl_s: float) -> None:
        """etcd confirmed a grant or keep-alive sent at ``sent_at`` with ``ttl_s`` left."""
        if ttl_s > 0:
            self.renewed_at = max(self.renewed_at, sent_at)
            self.valid_until = max(self.valid_until, sent_at + ttl_s - lease_margin_s(ttl_s))

    def lost(self) -> None:
        """The lease expired or was replaced: nothing is valid until the next grant."""
        self.valid_until = 0.0

    def valid(self) -> bool:
        return time.monotonic() < self.valid_until


async def port_refuses(address: tuple[str, int]) -> bool:
    """True only if a TCP connection to ``address`` is refused (nothing listens there); a
    timeout or any other failure says nothing about the process."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(*address), PROBE_TIMEOUT_S)
    except ConnectionRefusedError:
        return True
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return False


class DeadPeers:
    """Ends the etcd session of a peer whose process is confirmed dead (see the module)."""

    def __init__(self, view) -> None:
        self.view = view
        self._checking: set[int] = set()
        self._registered_at: dict[int, float] = {}  # monotonic time we saw each register
        self.revoked = 0  # sessions ended here (tests and logs)

    def registered(self, node_id: int) -> None:
        """Our watch saw broker ``node_id`` (re)register."""
        self._registered_at[node_id] = time.monotonic()

    def report(self, node_id: int, address: tuple[str, int]) -> None:
        """A connection to broker ``node_id`` at ``address`` was refused."""
        young = time.monotonic() - self._registered_at.get(node_id, 0.0) < YOUNG_REGISTRATION_S
        if node_id == self.view.node_id or node_id in self._checking or young:
            return
        self._checking.add(node_id)
        self.view.spawn(self._check(node_id, tuple(address)))

    async def _check(self, node_id: int, address: tuple[str, int]) -> None:
        try:
            await self._confirm_and_revoke(node_id, address)
        except EtcdError as exc:
            log.info("could not check broker %d's session: %s", node_id, exc)
        finally:
            self._checking.discard(node_id)

    async def _confirm_and_revoke(self, node_id: int, address: tuple[str, int]) -> None:
        etcd, key = self.view.etcd, self.view.keys.broker(node_id)
        registered = await etcd.get(key)
        if registered is None or not registered.lease or _address(registered) != address:
            return  # gone already, or another process registered elsewhere since
        for probe in range(PROBES):
            if probe:
                await asyncio.sleep(PROBE_GAP_S)
            if not await port_refuses(address):
                return
        current = await etcd.get(key)
        if current is None or current.lease != registered.lease:
            return  # a new run of that broker registered meanwhile: leave it be
        log.warning("broker %d at %s:%d refuses connections: its process is gone; ending its "
                    "etcd session now instead of after its lease", node_id, *address)
        await etcd.revoke_lease(registered.lease)
        self.revoked += 1


def _address(kv) -> tuple[str, int] | None:
    try:
        value = json.loads(kv.value)
        return value["host"], int(value["port"])
    except (ValueError, KeyError, TypeError):
        return None
