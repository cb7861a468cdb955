"""One connection's SASL state: what it may send before it has logged in, and the login.

``BrokerConnection`` hands this every request while the connection is not authenticated,
and every SaslHandshake/SaslAuthenticate after. Why a state machine here and not handlers in
the dispatch table: the login belongs to the connection (it sets ``connection.principal``
and ``connection.authenticated``), where the dispatch table's handlers are stateless.

Rules (Kafka's): until the exchange succeeds the connection may only send ApiVersions,
SaslHandshake and SaslAuthenticate; anything else closes it with a log line. A failed
exchange answers SASL_AUTHENTICATION_FAILED with a generic message and closes; a connection
still not authenticated ``sasl_authentication_timeout_ms`` after it opened is aborted (its
connection slot is free at once, not when a TLS peer answers the close). Before the login a
request may be at most ``sasl_server_max_receive_size`` bytes (a bigger one's length prefix
closes the connection before its body is read), and a failed login is answered only after
``connection_failed_authentication_delay_ms`` (a timer: the event loop serves others
meanwhile). Only a bounded prefix of a claimed user name is ever logged. The broker logs
``<peer>: authentication failed for user <name> (<mechanism>)`` on failure and
``<peer> authenticated as User:<name>`` on success, never a password or a proof. A broker
without ``sasl_mechanisms`` answers SaslHandshake UNSUPPORTED_SASL_MECHANISM with no
mechanisms, and its connections are authenticated from the start.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ..metrics import security_metrics
from . import ANONYMOUS
from .scram import LOGGED_NAME_CHARS, Authenticator, ExchangeFailed, ScramExchange

log = logging.getLogger("tslog.broker.security")

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def _authenticate_answer(code: ErrorCode, message: str | None = None,
                         auth_bytes: bytes = b"") -> dict:
    return {"error_code": int(code), "error_message": message, "auth_bytes": auth_bytes,
            "session_lifetime_ms": 0}


def _printable(failed: ExchangeFailed) -> str:
    """A claimed user name fit for one short log line: a hostile one may hold newlines or
    megabytes, so only its first ``LOGGED_NAME_CHARS`` characters, and its size."""
    name = failed.username
    if name is None and failed.claimed is not None:
        name = failed.claimed.decode("utf-8", "replace")
        return f"<a message too large to parse, starting {name[:LOGGED_NAME_CHARS]!r}>"
    if name is None:
        return "<unreadable>"
    if len(name) > LOGGED_NAME_CHARS:
        return f"{name[:LOGGED_NAME_CHARS]!r}... ({len(name)} characters)"
    return name if name.isprintable() else repr(name)


class SaslSession:
    """The SASL state of ``connection`` (a ``BrokerConnection``: its ``peer``,
    ``dispatch``, ``principal``, ``authenticated``, ``begin_shutdown``)."""

    def __init__(self, authenticator: Authenticator | None, connection) -> None:
        self.authenticator = authenticator
        self.connection = connection
        self.enabled = authenticator is not None and authenticator.enabled
        self.mechanism: str | None = None
        self.exchange: ScramExchange | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._receiver = None  # held to the pre-login size until the login (``start``)
        self._frame_cap = 0
        connection.principal = ANONYMOUS
        connection.authenticated = not self.enabled

    def start(self, loop: asyncio.AbstractEventLoop, receiver) -> None:
        """The connection opened: start the authentication clock, and hold its requests to
        ``max_receive_bytes`` until the login (``receiver``: its ``FrameReceiver``)."""
        if self.enabled and not self.connection.authenticated:
            self._timer = loop.call_later(self.authenticator.timeout_ms / 1000, self._expire)
            self._receiver = receiver
            self._frame_cap = receiver.max_frame_bytes
            receiver.max_frame_bytes = min(self._frame_cap,
                                           self.authenticator.max_receive_bytes)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        connection = self.connection
        if not connection.authenticated:
            log.warning("%s: not authenticated within %d ms; closing", connection.peer,
                        self.authenticator.timeout_ms)
            security_metrics.failed_login(self.mechanism, "timeout")
            connection.registry.release(connection)  # its slot is free now
            connection.abort()  # not close(): a TLS close waits for the peer's answer

    def handle(self, api_key: ApiKey, body: dict) -> dict | None:
        """The answer to a SASL request, or to any other request of an unauthenticated
        connection but ApiVersions (which the connection's front serves before the login);
        None: the request is refused and the connection must close now (logged here)."""
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(body)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            return self._authenticate(body)
        log.warning("%s: %s request before authentication; closing", self.connection.peer,
                    api_key.name)
        security_metrics.failed_login(self.mechanism, "request_before_login")
        return None

    def _handshake(self, body: dict) -> dict:
        if not self.enabled:
            return {"error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), "mechanisms": []}
        mechanisms = list(self.authenticator.mechanisms)
        if self.connection.authenticated or self.mechanism is not None:
            return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": mechanisms}
        if body["mechanism"] not in mechanisms:
            return {"error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
                    "mechanisms": mechanisms}
        self.mechanism = body["mechanism"]
        self.exchange = self.authenticator.exchange(self.mechanism)
        return {"error_code": 0, "mechanisms": mechanisms}

    def _authenticate(self, body: dict) -> dict:
        exchange = self.exchange
        if not self.enabled or exchange is None or exchange.done:
            self.connection.begin_shutdown()
            return _authenticate_answer(ErrorCode.ILLEGAL_SASL_STATE,
                                        "SaslAuthenticate without a SaslHandshake first")
        try:
            answer = exchange.step(body["auth_bytes"])
        except ExchangeFailed as failed:
            self.exchange = None
            log.warning("%s: authentication failed for user %s (%s)", self.connection.peer,
                        _printable(failed), self.mechanism)
            security_metrics.failed_login(self.mechanism, failed.reason)
            self.connection.begin_shutdown()  # no more requests; closed once answered
            return self._failure_answer(str(failed))
        if exchange.done and not self._succeeded(exchange.username):
            # Over max_connections_per_principal: the typed refusal instead of the success.
            return self.connection.refusal_response(ApiKey.SASL_AUTHENTICATE)
        return _authenticate_answer(ErrorCode.NONE, None, answer)

    def _failure_answer(self, message: str) -> dict | Awaitable[dict]:
        """SASL_AUTHENTICATION_FAILED, after ``failed_delay_ms`` (a task that sleeps: the
        event loop goes on serving every other connection meanwhile)."""
        answer = _authenticate_answer(ErrorCode.SASL_AUTHENTICATION_FAILED, message)
        delay_s = self.authenticator.failed_delay_ms / 1000
        if delay_s <= 0:
            return answer
        return asyncio.sleep(delay_s, answer)

    def _succeeded(self, username: str) -> bool:
        """Log the connection in, counted against its principal's connection cap; False if
        that cap refuses it (the connection closes once told why)."""
        connection = self.connection
        principal = f"User:{username}"
        self.stop()
        if self._receiver is not None:  # logged in: the broker's full frame size again
            self._receiver.max_frame_bytes = self._frame_cap
        registry = connection.registry
        registry.authenticated(connection)
        if not registry.principal_set(connection, principal):
            connection.begin_shutdown()
            return False
        log.info("%s authenticated as %s", connection.peer, principal)
        return True
