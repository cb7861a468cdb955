"""The client's SASL/SCRAM login, right after a connection is made: the one step the asyncio
``Connection.open`` and the blocking ``BrokerSocket`` both take when ``security.sasl``.

Both drive the sans-I/O exchange of ``tslog.protocol.sasl`` over their own socket, so the
login is written once. A refused login raises the wire error's client exception
(``SaslAuthenticationFailedError``, ``UnsupportedSaslMechanismError`` ...), which is not
retriable: a wrong password fails at once instead of being retried until a timeout.
"""

from __future__ import annotations

from tslog.protocol.sasl import SaslFailure, ScramLogin

from .errors import error_for
from .security import Security


def _exchange(security: Security) -> ScramLogin:
    return ScramLogin(security.sasl_mechanism, security.sasl_username, security.sasl_password)


async def login(connection, security: Security | None, timeout_ms: int) -> None:
    """Log ``connection`` (a ``_connection.Connection``) in; nothing without SASL. On
    failure the connection is closed and the error raised."""
    if security is None or not security.sasl:
        return
    try:
        exchange = _exchange(security)
        api_key, body = exchange.first()
        while api_key is not None:
            response = await connection.send(api_key, body, timeout_ms=timeout_ms)
            api_key, body = exchange.answer(response)
    except SaslFailure as failure:
        connection.close()
        raise error_for(failure.code)(str(failure)) from None
    except BaseException:
        connection.close()
        raise


def login_blocking(sock, security: Security | None) -> None:
    """The same for a ``blocking.BrokerSocket``."""
    if security is None or not security.sasl:
        return
    try:
        exchange = _exchange(security)
        api_key, body = exchange.first()
        while api_key is not None:
            api_key, body = exchange.answer(sock.request(api_key, body))
    except SaslFailure as failure:
        sock.close()
        raise error_for(failure.code)(str(failure)) from None
    except BaseException:
        sock.close()
        raise
