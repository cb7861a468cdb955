"""The client side of a SASL/SCRAM login, sans I/O: which requests to send, what to check in
the answers. The asyncio client (``client/_connection.py``), the blocking ``BrokerSocket``
and the broker's replication channel all drive this one exchange, each with its own socket.

Why sans I/O: three transports (two of them async, one of them inside the broker, which must
not import the client) must speak the same exchange; the SCRAM messages themselves are made
and checked by ``scramp`` (RFC 5802/7677), never here.

Use::

    login = ScramLogin("SCRAM-SHA-512", "alice", password)
    api_key, body = login.first()
    while api_key is not None:
        api_key, body = login.answer(send_and_receive(api_key, body))

``answer`` raises ``SaslFailure`` (with the broker's error code) when the broker refuses,
or when the broker's final message does not prove it knows the user's keys.

The client's salting for AlterUserScramCredentials lives here too (``salted_password``):
Kafka's wire carries the salted password, so the plain one never leaves the client.
"""

from __future__ import annotations

import hashlib
import os

import scramp
from scramp.utils import saslprep

from .errors import ErrorCode
from .sasl_schemas import SASL_AUTHENTICATE, SASL_HANDSHAKE

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # Kafka's bounds for a SCRAM credential's iteration count
MAX_ITERATIONS = 16384


class SaslFailure(Exception):
    """The login failed; ``code`` is the wire error code to raise it as."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ScramLogin:
    """One SCRAM login, step by step (see the module docstring). The password is held only
    by scramp's client object, never in a repr or a message."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        if mechanism not in MECHANISMS:
            raise SaslFailure(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                              f"unsupported SASL mechanism {mechanism!r}; use one of "
                              f"{', '.join(MECHANISMS)}")
        self.mechanism = mechanism
        self.username = username
        self._client = scramp.ScramClient([mechanism], username, password)
        self._step = 0

    def __repr__(self) -> str:
        return f"ScramLogin({self.mechanism}, {self.username!r}, step {self._step})"

    def first(self) -> tuple[int, dict]:
        """The first request: SaslHandshake naming the mechanism."""
        self._step = 1
        return SASL_HANDSHAKE, {"mechanism": self.mechanism}

    def answer(self, response: dict) -> tuple[int | None, dict | None]:
        """Take the response to the last request; the next request, or (None, None) when the
        broker has accepted the login. Raises ``SaslFailure``."""
        code = response.get("error_code", 0)
        if code:
            try:
                error = ErrorCode(code)
            except ValueError:
                error = ErrorCode.UNKNOWN_SERVER_ERROR
            raise SaslFailure(error, response.get("error_message")
                              or f"{self.mechanism} login as {self.username!r} refused: "
                                 f"{error.name}")
        step, self._step = self._step, self._step + 1
        try:
            if step == 1:
                return SASL_AUTHENTICATE, {
                    "auth_bytes": self._client.get_client_first().encode()}
            if step == 2:
                self._client.set_server_first(_text(response))
                return SASL_AUTHENTICATE, {
                    "auth_bytes": self._client.get_client_final().encode()}
            if step == 3:
                self._client.set_server_final(_text(response))
                return None, None
        except scramp.ScramException as exc:
            raise SaslFailure(ErrorCode.SASL_AUTHENTICATION_FAILED,
                              f"{self.mechanism} login as {self.username!r}: the broker's "
                              f"answer failed the SCRAM check ({exc})") from None
        raise SaslFailure(ErrorCode.ILLEGAL_SASL_STATE, "the SCRAM login is already over")


def _text(response: dict) -> str:
    try:
        return bytes(response.get("auth_bytes") or b"").decode()
    except UnicodeDecodeError:
        raise scramp.ScramException("not UTF-8") from None


def salted_password(mechanism: str, password: str, iterations: int,
                    salt: bytes | None = None) -> tuple[bytes, bytes]:
    """(salt, salted password) for an AlterUserScramCredentials upsertion: SCRAM's
    Hi(password, salt, i) of RFC 5802, which is PBKDF2 with the mechanism's HMAC, made by
    ``hashlib.pbkdf2_hmac``, over the password SASLprep'd by scramp's own ``saslprep`` (as
    its login does). A fresh random salt unless one is given."""
    if mechanism not in _HASHES:
        raise SaslFailure(ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                          f"unsupported SCRAM mechanism {mechanism!r}")
    salt = os.urandom(16) if salt is None else salt
    return salt, hashlib.pbkdf2_hmac(_HASHES[mechanism], saslprep(password).encode(), salt,
                                     iterations)


def hash_name(mechanism: str) -> str:
    """The hashlib name of a SCRAM mechanism's hash (KeyError for another mechanism)."""
    return _HASHES[mechanism]
