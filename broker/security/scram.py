"""The broker's side of a SCRAM exchange (RFC 5802/7677), made and checked by ``scramp``.

``Authenticator`` is the broker-wide part: which mechanisms are on, the credential store,
the time a connection has to log in. ``ScramExchange`` is one connection's login: the
client-first message in, the server-first out, the client-final in (scramp checks the
proof against the stored key), the server-final out.

Bounded work: a message over ``MAX_SCRAM_MESSAGE_BYTES`` fails the login before it is parsed.

No user enumeration: an unknown user is given a made-up credential with the parameters of a
real one (``decoy.py``: a stable salt derived from the name with the store's secret, the
default iteration count, keys nobody knows), so the exchange runs its full course and fails
at the proof exactly as a wrong password does.
The client sees one generic message either way; only the broker's log says which user
failed (never the password or the proof: the broker never has the password).
"""

from __future__ import annotations

import os

import scramp

from .credentials import CredentialStore
from .decoy import decoy_credential

GENERIC_FAILURE = "authentication failed: unknown user or wrong password"
# A SCRAM message is a user name, a nonce and a proof: a few hundred bytes from any real
# client. A bigger one fails at once, before scramp parses it (its SASLprep runs per
# character, all on the event loop: a user name of megabytes held the loop for seconds), so
# a login's parsing stays bounded, and a huge nonce is never echoed back.
MAX_SCRAM_MESSAGE_BYTES = 512
LOGGED_NAME_CHARS = 64  # how much of a claimed user name a log line holds
_DECOY_SECRET = os.urandom(32)  # without a store (SASL off): never leaves the process


class Authenticator:
    """What every connection's login needs (see the module docstring).

    Args:
        mechanisms: the mechanisms accepted; empty = SASL is off, connections are
            authenticated (as ``User:ANONYMOUS``) from the start.
        store: the credentials (its ``users`` map is read at each login).
        timeout_ms: a connection not authenticated by then is closed.
        max_receive_bytes: the largest request frame before login (Kafka's
            ``sasl.server.max.receive.size``).
        failed_delay_ms: how long a failed login waits for its answer (Kafka's
            ``connection.failed.authentication.delay.ms``).
    """

    def __init__(self, mechanisms: tuple[str, ...], store: CredentialStore | None,
                 timeout_ms: int, *, max_receive_bytes: int = 512 * 1024,
                 failed_delay_ms: int = 0) -> None:
        self.mechanisms = mechanisms
        self.store = store
        self.timeout_ms = timeout_ms
        self.max_receive_bytes = max_receive_bytes
        self.failed_delay_ms = failed_delay_ms
        self._scramp = {name: scramp.ScramMechanism(name) for name in mechanisms}

    @property
    def enabled(self) -> bool:
        return bool(self.mechanisms)

    def exchange(self, mechanism: str) -> ScramExchange:
        return ScramExchange(self, mechanism)

    def credential(self, mechanism: str, username: str) -> tuple[bytes, bytes, bytes, int]:
        """scramp's ``auth_fn``: the user's (salt, stored key, server key, iterations), or a
        decoy that no proof matches for a user without this mechanism's credential."""
        found = self.store.lookup(username, mechanism) if self.store is not None else None
        if found is not None:
            return found.salt, found.stored_key, found.server_key, found.iterations
        secret = self.store.decoy_secret if self.store is not None else _DECOY_SECRET
        return decoy_credential(secret, mechanism, username)


class ExchangeFailed(Exception):
    """The login failed; ``username`` is who it claimed to be (may be None: unreadable).
    ``claimed``: the start of an oversized message, for the log (never parsed). ``reason``
    (for the metrics): "too_large", "malformed" (a first message that does not parse, or a
    message after the last), "bad_credentials" (the final message fails: a wrong proof,
    for an unknown user or a wrong password alike)."""

    def __init__(self, username: str | None, claimed: bytes | None = None,
                 reason: str = "malformed") -> None:
        super().__init__(GENERIC_FAILURE)
        self.username = username
        self.claimed = claimed
        self.reason = "too_large" if claimed is not None else reason


class ScramExchange:
    """One connection's SCRAM login, one ``step`` per SaslAuthenticate."""

    def __init__(self, authenticator: Authenticator, mechanism: str) -> None:
        self.mechanism = mechanism
        self.username: str | None = None
        self.done = False

        def auth_fn(username: str):
            self.username = username
            return authenticator.credential(mechanism, username)

        self._server = authenticator._scramp[mechanism].make_server(auth_fn)
        self._step = 0

    def step(self, message: bytes) -> bytes:
        """The answer to the client's next message. Raises ``ExchangeFailed`` (the login is
        over); sets ``done`` when the client has proved it knows the password."""
        step, self._step = self._step, self._step + 1
        if len(message) > MAX_SCRAM_MESSAGE_BYTES:  # before scramp spends CPU on it
            raise ExchangeFailed(self.username, claimed=bytes(message[:LOGGED_NAME_CHARS]))
        try:
            text = bytes(message).decode("utf-8")
            if step == 0:
                self._server.set_client_first(text)
                return self._server.get_server_first().encode()
            if step == 1:
                self._server.set_client_final(text)
                answer = self._server.get_server_final().encode()
                self.done = True
                return answer
        except Exception:  # scramp's ScramException, or whatever a hostile message trips
            raise ExchangeFailed(self.username, reason="bad_credentials" if step == 1
                                 else "malformed") from None
        raise ExchangeFailed(self.username)
