"""Where the SCRAM credentials live: salted keys only, never a password.

A credential is what RFC 5802 lets a server keep: the salt, the iteration count, the stored
key H(HMAC(salted password, "Client Key")) and the server key HMAC(salted password, "Server
Key"). With them the broker checks a client's proof and proves itself, and a stolen copy does
not give the password (nor lets anyone log in without a dictionary attack per user).

Every broker answers logins from an in-memory map ``users`` (name -> mechanism ->
``ScramCredential``), which a store keeps current:

- ``LocalCredentialStore`` (single node): ``DATA_DIR/__meta/scram_credentials.json``,
  replaced atomically (temp file, fsync, rename, directory fsync: ``write_atomically``) on
  every change, so a crash leaves the old set or the new one.
- ``EtcdCredentialStore`` (cluster): one key per user, ``/<cluster>/scram_credentials/<name>``,
  loaded at start and followed with an etcd watch, so a user created through any broker can
  log in at every broker as soon as its watch delivers the change (a write also updates the
  writing broker's map at once).

Changes are ``apply(deletions, upsertions)`` coroutines, one at a time (a lock: two
concurrent changes each computed from the map before the other would lose one), persisted by
the store's ``_store`` (the single node writes its file in a worker thread); lookups are plain
reads of the map, on the event loop.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import hashlib
import hmac
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import scramp

from tslog.protocol.sasl import MECHANISMS, hash_name

from ..metadata import META_DIR
from ..storage.files import write_atomically
from .decoy import DECOY_ITERATIONS, SECRET_BYTES, new_secret

log = logging.getLogger("tslog.broker.security")

CREDENTIALS_FILE = "scram_credentials.json"
DECOY_SECRET_FILE = "scram_decoy_secret"  # the decoy salts' secret (``decoy.py``)
SECRET_MODE = 0o600  # files holding credentials or secrets: the broker's user only
BOOTSTRAP_ITERATIONS = DECOY_ITERATIONS

Users = dict[str, dict[str, "ScramCredential"]]


@dataclass(frozen=True)
class ScramCredential:
    """One user's credential for one mechanism (no password: see the module docstring)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # the keys are secrets too: never in a log line
        return f"ScramCredential(iterations={self.iterations})"

    @classmethod
    def derive(cls, mechanism: str, salt: bytes, salted_password: bytes,
               iterations: int) -> ScramCredential:
        """From an AlterUserScramCredentials upsertion: RFC 5802's two keys of the salted
        password the client computed, with ``hmac.digest`` and ``hashlib``."""
        name = hash_name(mechanism)
        client_key = hmac.digest(salted_password, b"Client Key", name)
        return cls(salt, hashlib.new(name, client_key).digest(),
                   hmac.digest(salted_password, b"Server Key", name), iterations)

    @classmethod
    def from_password(cls, mechanism: str, password: str,
                      iterations: int = BOOTSTRAP_ITERATIONS) -> ScramCredential:
        """For the bootstrap users file: scramp's own ``make_auth_info`` (fresh salt)."""
        salt, stored, server, count = scramp.ScramMechanism(mechanism).make_auth_info(
            password, iteration_count=iterations)
        return cls(salt, stored, server, count)

    def to_json(self) -> dict:
        b64 = base64.b64encode
        return {"salt": b64(self.salt).decode(), "stored_key": b64(self.stored_key).decode(),
                "server_key": b64(self.server_key).decode(), "iterations": self.iterations}

    @classmethod
    def from_json(cls, data: dict) -> ScramCredential:
        b64 = base64.b64decode
        return cls(b64(data["salt"]), b64(data["stored_key"]), b64(data["server_key"]),
                   int(data["iterations"]))


def encode_user(credentials: dict[str, ScramCredential]) -> dict:
    return {mechanism: credential.to_json() for mechanism, credential in credentials.items()}


def decode_user(data: dict) -> dict[str, ScramCredential]:
    return {mechanism: ScramCredential.from_json(value) for mechanism, value in data.items()
            if mechanism in MECHANISMS}


def changed(users: Users, deletions: list[tuple[str, str]],
            upsertions: list[tuple[str, str, ScramCredential]]) -> Users:
    """A new map with the changes applied (the old one is left as it was)."""
    result = {name: dict(credentials) for name, credentials in users.items()}
    for name, mechanism in deletions:
        result.get(name, {}).pop(mechanism, None)
        if name in result and not result[name]:
            del result[name]
    for name, mechanism, credential in upsertions:
        result.setdefault(name, {})[mechanism] = credential
    return result


class CredentialStore(abc.ABC):
    """The in-memory map every login reads; subclasses persist it."""

    def __init__(self) -> None:
        self.users: Users = {}
        self._changing = asyncio.Lock()
        # The decoy salts' secret: this process's until the store loads its persistent one
        # (``LocalCredentialStore.load_decoy_secret``, the etcd store's ``start``).
        self.decoy_secret = new_secret()

    def lookup(self, name: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(name, {}).get(mechanism)

    async def apply(self, deletions: list[tuple[str, str]],
                    upsertions: list[tuple[str, str, ScramCredential]]) -> None:
        """Persist the changes, then make them the map every login reads. Raises OSError
        (the single node's disk) or EtcdError (the cluster's store); then nothing changed."""
        async with self._changing:
            users = changed(self.users, deletions, upsertions)
            names = {name for name, _ in deletions} | {name for name, _, _ in upsertions}
            await self._store(users, names)
            self.users = users

    @abc.abstractmethod
    async def _store(self, users: Users, names: set[str]) -> None:
        """Persist ``users``, the new map, in which the users ``names`` changed."""

    async def close(self) -> None:
        """Stop following the store's changes (a single node has none to follow)."""

    async def bootstrap(self, path: str) -> list[str]:
        """Create each ``name:password`` user of ``path`` that does not exist yet (both
        mechanisms); existing users are left as they are. Returns the names created."""
        created = []
        upsertions = []
        for name, password in read_users_file(path):
            if name in self.users:
                continue
            created.append(name)
            for mechanism in MECHANISMS:
                upsertions.append((name, mechanism,
                                   ScramCredential.from_password(mechanism, password)))
        if upsertions:
            await self.apply([], upsertions)
        return created


class UsersFileError(OSError):
    """The bootstrap users file cannot be used: the broker does not start (one line, which
    names the file and the line number, never a line's content: it holds a password)."""


def read_users_file(path: str) -> list[tuple[str, str]]:
    """The ``name:password`` lines of a bootstrap users file (blank lines and ``#`` comments
    skipped). Raises OSError (``UsersFileError`` for a bad line)."""
    users = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, sep, password = line.partition(":")
            if not sep or not name.strip() or not password:
                raise UsersFileError(f"sasl_bootstrap_users_file {path}, line {number}: "
                                     "expected NAME:PASSWORD")
            users.append((name.strip(), password))
    return users


class LocalCredentialStore(CredentialStore):
    """A single node's credentials, in its data directory (see the module docstring)."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__()
        self.path = Path(data_dir) / META_DIR / CREDENTIALS_FILE
        if self.path.exists():
            _private(self.path)
            data = json.loads(self.path.read_text())
            self.users = {name: decode_user(value) for name, value in data.items()}

    def load_decoy_secret(self) -> None:
        """Read the decoy salts' secret from the data directory, made there (mode 0600) on
        first use: unknown names keep their salts across restarts. Blocking file I/O: call
        it before serving (``Broker.open`` runs in a worker thread)."""
        path = self.path.with_name(DECOY_SECRET_FILE)
        if path.exists():
            _private(path)
            secret = path.read_bytes()
            if len(secret) == SECRET_BYTES:
                self.decoy_secret = secret
                return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, self.decoy_secret, mode=SECRET_MODE)

    async def _store(self, users: Users, names: set[str]) -> None:
        data = json.dumps({name: encode_user(value) for name, value in users.items()},
                          sort_keys=True).encode()
        await asyncio.to_thread(self._write, data)

    def _write(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, data, mode=SECRET_MODE)


def _private(path: Path) -> None:
    """A credentials file readable by others (written by an older version): 0600 now."""
    if path.stat().st_mode & 0o077:
        path.chmod(SECRET_MODE)
        log.warning("%s was readable by other users; its mode is 0600 now", path)
