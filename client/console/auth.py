"""Who may use the console: a users file of PBKDF2 password hashes, checked by HTTP Basic.

Why this shape: the console needs its own authentication only when it listens beyond
loopback, and then it must not depend on the cluster being reachable to let an operator in.
A file of ``name:hash`` lines, one per user, is what the Prometheus exporter and nginx
operators already keep; the hash is the standard library's PBKDF2-HMAC-SHA256
(``hashlib.pbkdf2_hmac``, no hand-written crypto) with a random salt, written as
``pbkdf2_sha256$ITERATIONS$SALT_B64$HASH_B64``. ``tslog console --hash-password NAME``
makes NAME's line from a password on stdin (never from the command line, which ``ps`` shows).

HTTP Basic sends the password with every request: put TLS in front of a console that is not
on loopback (``--tls-cert-file``/``--tls-key-file``, or a reverse proxy).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
from pathlib import Path

from tslog.client.security import basic_credentials

ITERATIONS = 210_000  # OWASP's 2023 figure for PBKDF2-HMAC-SHA256
_SCHEME = "pbkdf2_sha256"


class UsersFileError(ValueError):
    """The users file cannot be read or has a malformed line (the message names the line,
    never its hash)."""


def hash_password(password: str, iterations: int = ITERATIONS) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return "$".join([_SCHEME, str(iterations), base64.b64encode(salt).decode(),
                     base64.b64encode(digest).decode()])


def verify(password: str, encoded: str) -> bool:
    scheme, iterations, salt, digest = encoded.split("$")
    assert scheme == _SCHEME  # load_users checked every line
    found = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt),
                                int(iterations))
    return hmac.compare_digest(found, base64.b64decode(digest))


def load_users(path: str | Path) -> dict[str, str]:
    """{name: encoded hash} from ``name:pbkdf2_sha256$...`` lines (# comments, blanks ok)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UsersFileError(f"cannot read users file {path}: {exc.strerror}") from None
    users = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, encoded = line.partition(":")
        parts = encoded.split("$")
        if not name or len(parts) != 4 or parts[0] != _SCHEME or not parts[1].isdigit():
            raise UsersFileError(f"{path} line {number}: expected NAME:{_SCHEME}$ITERATIONS$"
                                 "SALT$HASH (make one with tslog console --hash-password NAME)")
        users[name] = encoded
    if not users:
        raise UsersFileError(f"{path} names no user")
    return users


class Authenticator:
    """Checks ``Authorization: Basic`` headers against the users file.

    A PBKDF2 check costs a good part of a second by design, so a header once accepted is
    remembered, as an HMAC under a key made at start (never the password itself), and the
    next page is not slowed by it. Bounded: the memory is cleared when it grows large."""

    _REMEMBERED_MAX = 1024

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self._key = os.urandom(32)
        self._accepted: dict[bytes, str] = {}

    def user(self, header: str | None) -> str | None:
        """The user the header proves, or None."""
        if not header:
            return None
        tag = hmac.digest(self._key, header.encode(), "sha256")
        if tag in self._accepted:
            return self._accepted[tag]
        credentials = basic_credentials(header)
        if credentials is None:
            return None
        name, password = credentials
        encoded = self._users.get(name)
        if encoded is None or not verify(password, encoded):
            return None
        if len(self._accepted) >= self._REMEMBERED_MAX:
            self._accepted.clear()
        self._accepted[tag] = name
        return name


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``; a name or wildcard is not loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
