"""The broker's TLS: the listener's server context, the context it dials its peers with,
certificate reload on SIGHUP, and the principal a client certificate names.

Why one module: the three TLS files (``tls_cert_file``, ``tls_key_file``, ``tls_ca_file``)
feed both directions, and a reload must change exactly the context the listener was created
with: asyncio (and uvloop) wrap every accepted socket with that same ``SSLContext`` object,
so loading new files into it changes what the next handshake presents while every open
connection keeps its session. A reload first loads the files into a scratch context, so a
bad file leaves the live one untouched (the broker keeps serving with the old certificate).

Errors name the setting and the file, never key material: ``ssl`` reports a mismatched key
as "key values mismatch", which is all an operator needs.

Principals: a client certificate's subject in RFC 2253 order, Kafka's form
(``User:CN=alice,OU=eng,O=acme``), so ACLs written for Kafka carry over.
"""

from __future__ import annotations

import datetime
import logging
import os
import ssl
from typing import Any

from . import ANONYMOUS
from .principal_mapping import mapper

log = logging.getLogger("tslog.broker.security")

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
               "required": ssl.CERT_REQUIRED}
HANDSHAKE_TIMEOUT_S = 10.0  # a client that connects and never finishes the handshake
# How long a TLS close waits for the client's close_notify before aborting (asyncio's
# default is 30 s): a client that never answers must not hold its socket that long.
SHUTDOWN_TIMEOUT_S = 2.0

# OpenSSL's long attribute names (``getpeercert``) -> RFC 2253/4514 short names.
_SHORT_NAMES = {
    "commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
    "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}


class TlsSetupError(OSError):
    """A TLS file cannot be used: one line naming the setting and the file."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError):
        return (exc.reason or str(exc)).lower().replace("_", " ")
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)


def _check_readable(setting: str, path: str) -> None:
    if not os.access(path, os.R_OK):
        reason = "no such file" if not os.path.exists(path) else "not readable"
        raise TlsSetupError(f"{setting} {path}: {reason}")


def _load_cert_chain(context: ssl.SSLContext, cert_file: str, key_file: str) -> None:
    _check_readable("tls_cert_file", cert_file)
    _check_readable("tls_key_file", key_file)
    try:
        context.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError) as exc:
        raise TlsSetupError(f"tls_cert_file {cert_file} / tls_key_file {key_file}: "
                            f"cannot be used together: {_reason(exc)}") from None


def _load_ca(context: ssl.SSLContext, ca_file: str) -> None:
    _check_readable("tls_ca_file", ca_file)
    try:
        context.load_verify_locations(cafile=ca_file)
    except (ssl.SSLError, OSError) as exc:
        raise TlsSetupError(f"tls_ca_file {ca_file}: not a PEM CA bundle: "
                            f"{_reason(exc)}") from None


def _fill_server(context: ssl.SSLContext, config: Any) -> None:
    _load_cert_chain(context, config.tls_cert_file, config.tls_key_file)
    if config.tls_ca_file:
        _load_ca(context, config.tls_ca_file)


def server_timeouts(server_ssl: ssl.SSLContext | None) -> dict:
    """``create_server``'s TLS timeouts (none for plain TCP): the handshake's, and the
    close's, so that a client that never answers our close frees its socket soon."""
    if server_ssl is None:
        return {}
    return {"ssl_handshake_timeout": HANDSHAKE_TIMEOUT_S,
            "ssl_shutdown_timeout": SHUTDOWN_TIMEOUT_S}


def server_context(config: Any) -> ssl.SSLContext | None:
    """The listener's context (None: the listener speaks plain TCP). TLS 1.2 at least;
    client certificates as ``tls_client_auth`` says.

    Raises:
        TlsSetupError: a file is missing, unreadable, not PEM, or key and cert disagree.
    """
    if not config.tls_cert_file:
        return None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = CLIENT_AUTH[config.tls_client_auth]
    _fill_server(context, config)
    return context


def peer_context(config: Any) -> ssl.SSLContext | None:
    """The context a broker dials its peers with when its listener speaks TLS: the peers'
    certificates verified against ``tls_ca_file`` (the system's CAs if unset) and host name,
    and this broker's own certificate presented (its principal at the peer is its subject)."""
    if not config.tls_cert_file:
        return None
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if config.tls_ca_file:
        _load_ca(context, config.tls_ca_file)
    _load_cert_chain(context, config.tls_cert_file, config.tls_key_file)
    return context


def reload(contexts: list[ssl.SSLContext], config: Any) -> None:
    """SIGHUP: load the three files again into the live ``contexts`` (the listener's and the
    peer one), after a trial load into a scratch context. Logs one line either way; a
    failure keeps the old certificate in service."""
    try:
        _fill_server(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), config)  # trial: raises
        for context in contexts:
            _fill_server(context, config)
    except TlsSetupError as exc:
        log.error("TLS reload failed, still serving the previous certificate: %s", exc)
        return
    log.info("reloaded TLS certificate %s%s", config.tls_cert_file,
             _valid_until(config.tls_cert_file))


def _valid_until(cert_file: str) -> str:
    """`` (subject ..., valid until ...)`` read from the PEM file, or "" if it cannot be."""
    try:
        decoded = ssl._ssl._test_decode_cert(cert_file)  # CPython's own PEM reader
    except Exception:  # noqa: BLE001 - only a log detail
        return ""
    subject = subject_dn(decoded.get("subject", ()))
    until = decoded.get("notAfter")
    if until:
        when = datetime.datetime.fromtimestamp(ssl.cert_time_to_seconds(until),
                                               datetime.timezone.utc)
        until = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return f" (subject {subject}, serial {decoded.get('serialNumber')}, valid until {until})"


def _escape(value: str) -> str:
    """RFC 4514 escaping of one attribute value."""
    out = "".join("\\" + ch if ch in ',+"\\<>;=' else ch for ch in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and len(out) > 1:
        out = out[:-1] + "\\ "
    return out


def subject_dn(subject: tuple) -> str:
    """``getpeercert()['subject']`` (RDNs in certificate order) as an RFC 2253 string:
    the last RDN first, e.g. ``CN=alice,OU=eng,O=acme``."""
    rdns = []
    for rdn in reversed(subject):
        rdns.append("+".join(f"{_SHORT_NAMES.get(name, name)}={_escape(value)}"
                             for name, value in rdn))
    return ",".join(rdns)


def certificate_principal(transport: Any, peer: str, rules: str = "DEFAULT") -> str | None:
    """``User:<name>`` when the handshake gave a verified client certificate, the name being
    its subject DN mapped by ``rules`` (``tls_principal_mapping_rules``), else ``ANONYMOUS``
    (plain TCP, or TLS without a client certificate). None, logged: no rule maps the
    subject, and the connection is to be refused. Logs the authentication."""
    cert = transport.get_extra_info("peercert")
    if not cert or not cert.get("subject"):
        return ANONYMOUS
    subject = subject_dn(cert["subject"])
    name = mapper(rules).name(subject)
    if name is None:
        log.warning("%s: certificate subject %s matches no tls_principal_mapping_rules rule; "
                    "refusing the connection", peer, subject)
        return None
    principal = "User:" + name
    log.info("%s authenticated as %s", peer, principal)
    return principal
