"""The ``/metrics`` endpoint's security: Prometheus' exporter-toolkit web configuration file.

Why this format: operators already write it for node_exporter and every other exporter
(``--web.config.file``), and Prometheus' own docs describe it, so a secured tslog scrape
is set up like any other. The subset read here::

    tls_server_config:
      cert_file: broker.pem          # both: serve HTTPS only (minimum TLS 1.2)
      key_file: broker.key
      client_ca_file: ca.pem         # optional: CAs for scrapers' client certificates
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert, VerifyClientCertIfGiven
      min_version: TLS12             # or TLS13
      max_version: TLS13
    basic_auth_users:
      prometheus: $2b$12$...         # bcrypt hashes, never passwords

Relative paths are relative to the file itself, as in exporter-toolkit. Unknown keys are
an error, as in the rest of the broker's configuration: a misspelt ``basic_auth_users``
must not leave the endpoint open. A problem becomes one ``WebConfigError`` naming the file
and the key, never a hash. exporter-toolkit's ``RequestClientCert`` and
``RequireAnyClientCert`` (a certificate asked for but not verified) are refused: Python's
``ssl`` verifies every client certificate it asks for.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from typing import Any, Mapping

import bcrypt
import yaml

_TOP_KEYS = {"tls_server_config", "basic_auth_users"}
_TLS_KEYS = {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version",
             "max_version"}
_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {  # exporter-toolkit's names -> what ssl asks of a client
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")


class WebConfigError(ValueError):
    """The web config file cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class WebConfig:
    """What the endpoint enforces: a TLS context (None = plain HTTP) and basic-auth users
    (name -> bcrypt hash; empty = no authentication)."""

    path: str | None = None
    tls: ssl.SSLContext | None = None
    users: Mapping[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def authenticates(self) -> bool:
        """Whether a scraper must prove who it is: basic auth, or a verified certificate."""
        return bool(self.users) or (self.tls is not None
                                    and self.tls.verify_mode == ssl.CERT_REQUIRED)

    def check(self, username: str, password: str) -> bool:
        """True if the password matches the user's bcrypt hash (bcrypt's constant-time
        check). An unknown user costs a check against the first hash too, so the time
        taken does not tell which names exist."""
        if not self.users:
            return True
        hashed = self.users.get(username)
        known = hashed is not None
        candidate = hashed if known else next(iter(self.users.values()))
        try:
            matches = bcrypt.checkpw(password.encode(), candidate)
        except ValueError:
            return False
        return known and matches


def load_web_config(path: str) -> WebConfig:
    """Read and check the file at ``path``. Raises WebConfigError."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except OSError as exc:
        raise WebConfigError(f"cannot read metrics web config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise WebConfigError(f"metrics web config {path} is not valid YAML{line}") from None
    try:
        return _parse(path, document if document is not None else {})
    except _Problem as problem:
        raise WebConfigError(f"metrics web config {path}: {problem}") from None


class _Problem(Exception):
    pass


def _mapping(value: Any, what: str, allowed: set[str] | None) -> dict:
    if not isinstance(value, dict):
        raise _Problem(f"{what} must be a mapping")
    if allowed is not None:
        unknown = sorted(str(key) for key in value if key not in allowed)
        if unknown:
            raise _Problem(f"unknown key {unknown[0]!r} in {what} "
                           f"(known: {', '.join(sorted(allowed))})")
    return value


def _parse(path: str, document: Any) -> WebConfig:
    document = _mapping(document, "the file", _TOP_KEYS)
    base = os.path.dirname(os.path.abspath(path))
    tls = None
    if document.get("tls_server_config") is not None:
        tls = _tls_context(_mapping(document["tls_server_config"], "tls_server_config",
                                    _TLS_KEYS), base)
    users: dict[str, bytes] = {}
    for name, hashed in _mapping(document.get("basic_auth_users") or {},
                                 "basic_auth_users", None).items():
        if not isinstance(name, str) or not name or ":" in name:
            raise _Problem(f"basic_auth_users: user name {name!r} must be a non-empty "
                           f"string without ':'")
        if not isinstance(hashed, str) or not hashed.startswith(_BCRYPT_PREFIXES) \
                or len(hashed) != 60:
            raise _Problem(f"basic_auth_users: the value for {name!r} is not a bcrypt hash "
                           f"(make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n')")
        users[name] = hashed.encode()
    return WebConfig(path, tls, users)


def _file(settings: dict, key: str, base: str) -> str | None:
    value = settings.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _Problem(f"tls_server_config.{key} must be a path")
    return os.path.join(base, value)


def _tls_context(settings: dict, base: str) -> ssl.SSLContext:
    cert_file, key_file = _file(settings, "cert_file", base), _file(settings, "key_file", base)
    if cert_file is None or key_file is None:
        raise _Problem("tls_server_config needs both cert_file and key_file")
    ca_file = _file(settings, "client_ca_file", base)
    auth_name = settings.get("client_auth_type") or "NoClientCert"
    if auth_name not in _CLIENT_AUTH:
        raise _Problem(f"tls_server_config.client_auth_type {auth_name!r} is not supported "
                       f"(one of: {', '.join(_CLIENT_AUTH)})")
    if _CLIENT_AUTH[auth_name] != ssl.CERT_NONE and ca_file is None:
        raise _Problem(f"tls_server_config.client_auth_type {auth_name} needs client_ca_file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _version(settings, "min_version", ssl.TLSVersion.TLSv1_2)
    context.maximum_version = _version(settings, "max_version", ssl.TLSVersion.MAXIMUM_SUPPORTED)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (OSError, ssl.SSLError) as exc:
        raise _Problem(f"cannot load tls_server_config cert_file {cert_file} with its "
                       f"key_file: {_reason(exc)}") from None
    if ca_file is not None:
        try:
            context.load_verify_locations(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise _Problem(f"cannot load tls_server_config client_ca_file {ca_file}: "
                           f"{_reason(exc)}") from None
    context.verify_mode = _CLIENT_AUTH[auth_name]
    return context


def _version(settings: dict, key: str, default: ssl.TLSVersion) -> ssl.TLSVersion:
    name = settings.get(key)
    if name is None:
        return default
    if name not in _VERSIONS:
        raise _Problem(f"tls_server_config.{key} must be TLS12 or TLS13, got {name!r}")
    return _VERSIONS[name]


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)
