"""One connection's SASL state: what it may send before it has logged in, and the login.

``BrokerConnection`` hands this every request while the connection is not authenticated,
and every SaslHandshake/SaslAuthenticate after. Why a state machine here and not handlers in
the dispatch table: the login belongs to the connection (it sets ``connection.principal``
and ``connection.authenticated``), where the dispatch table's handlers are stateless.

Rules (Kafka's): until the exchange succeeds the connection may only send ApiVersions,
SaslHandshake and SaslAuthenticate; anything else closes it with a log line. A failed
exchange answers SASL_AUTHENTICATION_FAILED with a generic message and closes; a connection
still not authenticated ``sasl_authentication_timeout_ms`` after it opened is closed. The
broker logs ``<peer>: authentication failed for user <name> (<mechanism>)`` on failure and
``<peer> authenticated as User:<name>`` on success, never a password or a proof. A broker
without ``sasl_mechanisms`` answers SaslHandshake UNSUPPORTED_SASL_MECHANISM with no
mechanisms, and its connections are authenticated from the start.
"""

from __future__ import annotations

import asyncio
import logging

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from . import ANONYMOUS
from .scram import Authenticator, ExchangeFailed, ScramExchange

log = logging.getLogger("tslog.broker.security")

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def _authenticate_answer(code: ErrorCode, message: str | None = None,
                         auth_bytes: bytes = b"") -> dict:
    return {"error_code": int(code), "error_message": message, "auth_bytes": auth_bytes,
            "session_lifetime_ms": 0}


def _printable(name: str | None) -> str:
    """A claimed user name fit for one log line (a hostile one may hold newlines)."""
    if name is None:
        return "<unreadable>"
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
        connection.principal = ANONYMOUS
        connection.authenticated = not self.enabled

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The connection opened: start the authentication clock."""
        if self.enabled:
            self._timer = loop.call_later(self.authenticator.timeout_ms / 1000, self._expire)

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
            connection.begin_shutdown()

    def handle(self, api_key: ApiKey, body: dict) -> dict | None:
        """The answer to a request of an unauthenticated connection, or to any SASL request;
        None: the request is refused and the connection must close now (logged here)."""
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(body)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            return self._authenticate(body)
        if api_key == ApiKey.API_VERSIONS:
            return self.connection.dispatch[api_key](body)
        log.warning("%s: %s request before authentication; closing", self.connection.peer,
                    api_key.name)
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
                        _printable(failed.username), self.mechanism)
            self.connection.begin_shutdown()  # after this answer goes out
            return _authenticate_answer(ErrorCode.SASL_AUTHENTICATION_FAILED, str(failed))
        if exchange.done and not self._succeeded(exchange.username):
            # Over max_connections_per_principal: the typed refusal instead of the success.
            return self.connection.refusal_response(ApiKey.SASL_AUTHENTICATE)
        return _authenticate_answer(ErrorCode.NONE, None, answer)

    def _succeeded(self, username: str) -> bool:
        """Log the connection in, counted against its principal's connection cap; False if
        that cap refuses it (the connection closes once told why)."""
        connection = self.connection
        principal = f"User:{username}"
        self.stop()
        registry = connection.registry
        registry.authenticated(connection)
        if not registry.principal_set(connection, principal):
            connection.begin_shutdown()
            return False
        log.info("%s authenticated as %s", connection.peer, principal)
        return True
