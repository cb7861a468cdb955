"""The live connections: the connection limits, the broker-wide unsent bytes, the drain.

Connection limits, so that one client cannot take every slot (issue 16: 2,000 idle
connections from one address kept a normal consumer out, silently):

- ``max_connections``: every connection the broker holds;
- ``max_connections_per_address``: per client IP address;
- ``max_connections_per_principal``: per authenticated principal, counted from the moment a
  connection has one (mutual TLS sets it when the connection is made, SCRAM when the
  exchange succeeds: ``principal_set``). ``User:ANONYMOUS`` is never counted: without
  authentication every client is that principal, and the per-address cap is the one that
  tells clients apart;
- ``max_unauthenticated_connections``: connections that have not authenticated yet, which
  exist only while SASL is on (``authenticated`` ends it); a flood of half-open handshakes
  cannot crowd out the clients that did log in;
- ``max_unauthenticated_connections_per_address``: the same per client IP address, so one
  address's idle handshakes cannot take the broker-wide ones from the others (issue 38: 300
  idle TLS connections from one address locked every other client out);
- ``max_connection_rate_per_address``: new connections that must log in, per second per
  address (``security/connection_rate.py``).

0 turns any of the last five off. Each connection's counts are kept in its own ``_Entry``,
so a release takes back exactly what was added, whatever changed in between (a principal set
twice, authentication after a refusal): the counters never leak.

A connection over a limit is not simply dropped (its client would retry in silence): it
answers the client's first request with TOO_MANY_CONNECTIONS, naming the limit, then closes
(``BrokerConnection.refuse``). The reason is logged once a minute per address and limit.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING, NamedTuple, Protocol

from tslog.protocol.errors import ErrorCode

from ..metrics.definitions import OPEN_CONNECTIONS, REFUSED
from ..security import ANONYMOUS
from ..security.connection_rate import ConnectionRate
from .foreign_clients import ForeignClientNotes

if TYPE_CHECKING:
    from ..config import BrokerConfig

log = logging.getLogger("tslog.broker.connection")

# Refused connections waiting for their client's first request (to answer it with the
# reason) hold a socket each, for at most ``REFUSAL_WAIT_S``; beyond this many at once (a
# flood), further ones are closed at once, unanswered, with a log line. Per address too, so
# one flooding address cannot use up the answers every other client's refusal is owed.
MAX_PENDING_REFUSALS = 256
MAX_PENDING_REFUSALS_PER_ADDRESS = 16
REFUSAL_WAIT_S = 1.0


class Refusal(NamedTuple):
    """Why a connection was refused: the limit's setting name, its value, who hit it."""

    limit: str  # the setting: "max_connections_per_address", ...
    cap: int
    who: str  # the address or principal that reached it ("" for max_connections)

    @property
    def message(self) -> str:
        """The one line the client (and the broker's log) gets."""
        if self.limit == "max_connection_rate_per_address":
            return (f"too many new connections from {self.who}: {self.limit} = {self.cap} "
                    f"per second reached; connect less often, or ask the operator to raise "
                    f"{self.limit}")
        subject = {"max_connections": "connections to this broker",
                   "max_connections_per_address": f"connections from {self.who}",
                   "max_connections_per_principal": f"connections of {self.who}",
                   "max_unauthenticated_connections": "connections not yet authenticated",
                   "max_unauthenticated_connections_per_address":
                       f"connections not yet authenticated from {self.who}",
                   }[self.limit]
        return (f"too many {subject}: {self.limit} = {self.cap} reached; close idle "
                f"connections, or ask the operator to raise {self.limit}")

    @property
    def code(self) -> ErrorCode:
        return ErrorCode.TOO_MANY_CONNECTIONS


class BrokerConnection(Protocol):
    """What the registry needs of a connection (``connection.BrokerConnection``, which
    imports this module)."""

    peer: str
    principal: str
    authenticated: bool
    closed: asyncio.Future

    def refuse(self, refusal: Refusal) -> None: ...
    def pump(self) -> None: ...
    def begin_shutdown(self) -> None: ...
    def abort(self) -> None: ...


_METRIC_REASON = {
    "max_connections": "too_many_connections",
    "max_connections_per_address": "connections_per_address",
    "max_connections_per_principal": "connections_per_principal",
    "max_unauthenticated_connections": "unauthenticated_connections",
    "max_unauthenticated_connections_per_address": "unauthenticated_connections_per_address",
    "max_connection_rate_per_address": "connection_rate_per_address",
}


class _Entry:
    """What one admitted connection is counted under (taken back on release)."""

    __slots__ = ("address", "principal", "unauthenticated")

    def __init__(self, address: str) -> None:
        self.address = address
        self.principal: str | None = None  # counted per principal (never ANONYMOUS)
        self.unauthenticated = False


def _host(peer: str) -> str:
    """``"10.0.0.7:51234"`` / ``"::1:51234"`` -> the address part."""
    return peer.rsplit(":", 1)[0] if ":" in peer else peer


class ConnectionRegistry:
    """The live connections: enforces the connection limits (module docstring), sums their
    unsent response bytes against ``max_unsent_bytes`` (``connection.py``'s docstring), and
    drains them at shutdown.

    A connection handed to ``admit`` has ``peer`` ("host:port"), ``principal`` and
    ``authenticated``; ``refuse(refusal)`` is called on one refused after admission.
    """

    def __init__(self, max_connections: int, max_unsent_bytes: int = 1 << 62, *,
                 max_per_address: int = 0, max_per_principal: int = 0,
                 max_unauthenticated: int = 0, max_unauthenticated_per_address: int = 0,
                 max_rate_per_address: int = 0) -> None:
        self.max_connections = max_connections
        self.max_per_address = max_per_address
        self.max_per_principal = max_per_principal
        self.max_unauthenticated = max_unauthenticated
        self.max_unauthenticated_per_address = max_unauthenticated_per_address
        self.rate = ConnectionRate(max_rate_per_address)
        self.connections: dict[BrokerConnection, _Entry] = {}
        self.by_address: collections.Counter[str] = collections.Counter()
        self.by_principal: collections.Counter[str] = collections.Counter()
        self.unauthenticated = 0
        self.unauthenticated_by_address: collections.Counter[str] = collections.Counter()
        self.refused = 0
        self.pending_refusals = 0  # refused connections waiting to answer (``REFUSAL_WAIT_S``)
        self.pending_by_address: collections.Counter[str] = collections.Counter()
        self.max_unsent_bytes = max_unsent_bytes
        self.unsent_bytes = 0  # every connection's held + buffered response bytes
        self.waiting: set[BrokerConnection] = set()  # held back by the broker-wide cap
        self._wake_scheduled = False
        self.foreign_clients = ForeignClientNotes()
        self.refusal_notes = ForeignClientNotes()

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConnectionRegistry:
        return cls(config.max_connections, config.max_total_unsent_response_bytes,
                   max_per_address=config.max_connections_per_address,
                   max_per_principal=config.max_connections_per_principal,
                   max_unauthenticated=config.max_unauthenticated_connections,
                   max_unauthenticated_per_address=(
                       config.max_unauthenticated_connections_per_address),
                   max_rate_per_address=config.max_connection_rate_per_address)

    # -- the limits ------------------------------------------------------------------------

    def admit(self, connection: BrokerConnection) -> Refusal | None:
        """Count a new connection in, or say which limit refuses it (nothing is counted)."""
        address = _host(connection.peer)
        principal = connection.principal
        refusal = None
        if len(self.connections) >= self.max_connections:
            refusal = Refusal("max_connections", self.max_connections, "")
        elif 0 < self.max_per_address <= self.by_address[address]:
            refusal = Refusal("max_connections_per_address", self.max_per_address, address)
        elif not connection.authenticated:
            refusal = self._unauthenticated_refusal(address)
        if (refusal is None and principal != ANONYMOUS
                and 0 < self.max_per_principal <= self.by_principal[principal]):
            refusal = Refusal("max_connections_per_principal", self.max_per_principal, principal)
        if refusal is not None:
            self._count_refusal(connection, refusal)
            return refusal
        entry = _Entry(address)
        self.connections[connection] = entry
        self.by_address[address] += 1
        if not connection.authenticated:
            entry.unauthenticated = True
            self.unauthenticated += 1
            self.unauthenticated_by_address[address] += 1
        if principal != ANONYMOUS:
            entry.principal = principal
            self.by_principal[principal] += 1
        OPEN_CONNECTIONS.inc()
        return None

    def _unauthenticated_refusal(self, address: str) -> Refusal | None:
        """The limits on connections that must still log in: the broker-wide and
        per-address counts, then the rate (a connection the counts let in takes a token)."""
        if 0 < self.max_unauthenticated <= self.unauthenticated:
            return Refusal("max_unauthenticated_connections", self.max_unauthenticated, "")
        cap = self.max_unauthenticated_per_address
        if 0 < cap <= self.unauthenticated_by_address[address]:
            return Refusal("max_unauthenticated_connections_per_address", cap, address)
        if not self.rate.allow(address, time.monotonic()):
            return Refusal("max_connection_rate_per_address", self.rate.rate, address)
        return None

    def principal_set(self, connection: BrokerConnection, principal: str) -> bool:
        """The connection's principal is now ``principal`` (mutual TLS or SCRAM): count it
        per principal. False (and the connection told, ``connection.refuse``) if that
        principal already has ``max_connections_per_principal`` connections; then it stays
        counted as before."""
        entry = self.connections.get(connection)
        if entry is None:  # refused or closed already: nothing to count
            return False
        if principal == entry.principal:
            return True
        if (principal != ANONYMOUS
                and 0 < self.max_per_principal <= self.by_principal[principal]):
            refusal = Refusal("max_connections_per_principal", self.max_per_principal,
                              principal)
            self._count_refusal(connection, refusal)
            connection.refuse(refusal)
            return False
        self._uncount_principal(entry)
        if principal != ANONYMOUS:
            entry.principal = principal
            self.by_principal[principal] += 1
        connection.principal = principal
        return True

    def authenticated(self, connection: BrokerConnection) -> None:
        """The connection authenticated: it no longer counts as unauthenticated."""
        connection.authenticated = True
        entry = self.connections.get(connection)
        if entry is not None and entry.unauthenticated:
            self._uncount_unauthenticated(entry)

    def release(self, connection: BrokerConnection) -> None:
        self.waiting.discard(connection)
        entry = self.connections.pop(connection, None)
        if entry is None:
            return
        self.by_address[entry.address] -= 1
        if not self.by_address[entry.address]:
            del self.by_address[entry.address]
        if entry.unauthenticated:
            self._uncount_unauthenticated(entry)
        self._uncount_principal(entry)
        OPEN_CONNECTIONS.dec()

    def _uncount_unauthenticated(self, entry: _Entry) -> None:
        entry.unauthenticated = False
        self.unauthenticated -= 1
        self.unauthenticated_by_address[entry.address] -= 1
        if not self.unauthenticated_by_address[entry.address]:
            del self.unauthenticated_by_address[entry.address]

    def _uncount_principal(self, entry: _Entry) -> None:
        if entry.principal is not None:
            self.by_principal[entry.principal] -= 1
            if not self.by_principal[entry.principal]:
                del self.by_principal[entry.principal]
            entry.principal = None

    def _count_refusal(self, connection: BrokerConnection, refusal: Refusal) -> None:
        """Count it, and log it once a minute per address and limit (a client retrying in a
        loop would otherwise write a line per attempt)."""
        self.refused += 1
        REFUSED[_METRIC_REASON[refusal.limit]].inc()
        key = f"{_host(connection.peer)} {refusal.limit}"
        if self.refusal_notes.first_in_a_while(key, time.monotonic()):
            log.warning("%s: connection refused: %s", connection.peer, refusal.message)
        else:
            log.debug("%s: connection refused: %s", connection.peer, refusal.message)

    def hold_refusal(self, connection: BrokerConnection) -> bool:
        """A refused connection may wait ``REFUSAL_WAIT_S`` for a request to answer with
        the reason: True, counted (``refusal_done`` takes it back). False in a flood, over
        ``MAX_PENDING_REFUSALS`` or ``MAX_PENDING_REFUSALS_PER_ADDRESS``: the caller closes
        it at once, and the close is logged here (once a minute per address), never silent."""
        address = _host(connection.peer)
        if (self.pending_refusals < MAX_PENDING_REFUSALS
                and self.pending_by_address[address] < MAX_PENDING_REFUSALS_PER_ADDRESS):
            self.pending_refusals += 1
            self.pending_by_address[address] += 1
            return True
        text = (f"{connection.peer}: closing a refused connection unanswered: "
                f"{self.pending_by_address[address]} refusals from {address} "
                f"({self.pending_refusals} in all) are waiting to be answered")
        if self.refusal_notes.first_in_a_while(f"{address} unanswered", time.monotonic()):
            log.warning("%s", text)
        else:
            log.debug("%s", text)
        return False

    def refusal_done(self, connection: BrokerConnection) -> None:
        """A refusal counted by ``hold_refusal`` was answered, timed out or closed."""
        address = _host(connection.peer)
        self.pending_refusals -= 1
        self.pending_by_address[address] -= 1
        if not self.pending_by_address[address]:
            del self.pending_by_address[address]

    # -- unsent bytes ----------------------------------------------------------------------

    def wake(self) -> None:
        """The total went down: soon, let the connections it held back try again (each
        re-checks, and waits again if the ones before it took the room). Called from deep
        inside other connections' writes, so it only schedules."""
        if not self._wake_scheduled and self.unsent_bytes < self.max_unsent_bytes:
            self._wake_scheduled = True
            asyncio.get_running_loop().call_soon(self._wake_now)

    def _wake_now(self) -> None:
        self._wake_scheduled = False
        waiting = list(self.waiting)
        self.waiting.clear()
        for connection in waiting:
            connection.pump()

    async def drain(self, grace_s: float) -> None:
        """Stop reading everywhere, let in-flight requests finish for ``grace_s``, then close."""
        connections = list(self.connections)
        for connection in connections:
            connection.begin_shutdown()
        waits = [connection.closed for connection in connections]
        if waits:
            await asyncio.wait(waits, timeout=grace_s)
            for connection in connections:
                if not connection.closed.done():
                    log.warning("%s: in-flight requests still running after the grace "
                                "period; closing", connection.peer)
                    connection.abort()
