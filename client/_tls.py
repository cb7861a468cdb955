"""How a failed TLS handshake, a listener that wants TLS or a login, and a Kafka listener
are told apart from an unreachable broker, and said.

Why: a wrong CA, a plain-TCP listener or a refused client certificate fail the same way on
every attempt, so the client raises ``TlsError`` (not retriable) at once with the broker's
address and the reason, where a refused or unreachable address stays a retriable
``ConnectionLostError``. Shared by ``_connection.py`` (asyncio) and ``blocking.py``.
"""

from __future__ import annotations

import ssl

from .errors import SecurityRequiredError, TlsError, WrongProtocolError


def is_tls_failure(exc: BaseException) -> bool:
    """A failure of the handshake itself, not of reaching the broker: a refused or
    unreachable address stays a (retriable) ``ConnectionLostError``."""
    return isinstance(exc, (ssl.SSLError, ConnectionResetError, BrokenPipeError))


def tls_failure_message(host: str, port: int, exc: BaseException) -> str:
    """One line naming the broker and the TLS reason."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        reason = f"its certificate is not trusted: {exc.verify_message}"
    elif isinstance(exc, ssl.SSLError):
        reason = (exc.reason or str(exc)).lower().replace("_", " ")
        if reason in ("wrong version number", "record layer failure", "packet length too long"):
            reason += " (is the broker's listener plain TCP, not TLS?)"
        elif "alert" in reason or "certificate" in reason:
            reason += " (did the broker refuse this client's certificate, or need one?)"
    else:
        reason = f"the broker closed the connection during the handshake ({exc!r}): it may " \
                 "not speak TLS, or it refused this client's certificate"
    return f"TLS handshake with {host}:{port} failed: {reason}"


def kafka_listener_error(host: str, port: int) -> WrongProtocolError:
    """The address is a broker's Kafka listener: say which port tslog's own client wants."""
    return WrongProtocolError(
        f"{host}:{port} answered in Kafka's wire protocol: it is a broker's Kafka listener "
        "(kafka_listen), for Kafka clients; tslog's client and command line speak tslog's "
        "protocol on the broker's other port, its listen address (127.0.0.1:9092 unless "
        "set otherwise)")


def closed_unanswered(host: str, port: int, tls: bool) -> SecurityRequiredError | TlsError:
    """The broker closed a new connection before answering its first request: the signs
    of a TLS mismatch, since a TLS listener drops a failed handshake without a word.

    Over TLS the handshake itself passed (TLS 1.3 checks the client certificate after the
    client's side is done), so the broker refused this client's certificate or wanted one:
    ``TlsError``, not retried. Over plain TCP the listener probably speaks TLS or wants a
    SASL login: a ``SecurityRequiredError``, still a retriable ``ConnectionLostError`` (a
    broker stopping at that moment looks the same), with the hint in its message.
    """
    if tls:
        return TlsError(f"TLS connection to {host}:{port} closed by the broker before it "
                        "answered: it refused this client's certificate, or requires one "
                        "(mutual TLS: set ssl_certfile and ssl_keyfile), or it requires a "
                        "SASL login (protocol SASL_SSL with a username and password; "
                        "docs/security.md)")
    return SecurityRequiredError(f"{host}:{port} closed the connection before answering: "
                                 "if its listener speaks TLS, connect with "
                                 "security=Security(protocol='SSL', ...); if it requires a "
                                 "SASL login, with protocol SASL_PLAINTEXT or SASL_SSL and a "
                                 "username and password (docs/security.md)",
                                 address=f"{host}:{port}")
