"""Certificates for TLS tests, made with ``trustme`` (no files checked in, nothing expires).

``make_tls_files(directory)`` writes, as PEM: a CA (``ca``), a broker certificate and key for
127.0.0.1/localhost signed by it, two client certificates with distinct subjects
(``alice``: ``CN=alice,OU=eng,O=acme``; ``bob``: ``CN=bob,OU=ops\\+dev,O=acme``, a
character RFC 4514 escapes), and a second, unrelated
CA (``other_ca``) whose broker certificate no client should trust. ``broker_config`` gives
the broker settings for a TLS listener; ``client_context`` a client ``SSLContext`` (for the
readiness probe and raw tests); ``security`` the client's ``Security`` options.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path

import trustme

from tslog.client.security import Security  # re-exported for tests


@dataclass(frozen=True)
class ClientCert:
    cert: str
    key: str
    principal: str  # what the broker should call it


@dataclass(frozen=True)
class TlsFiles:
    ca: str
    broker_cert: str
    broker_key: str
    alice: ClientCert
    bob: ClientCert
    other_ca: str
    other_broker_cert: str  # signed by other_ca, for 127.0.0.1
    other_broker_key: str
    authority: trustme.CA = field(repr=False, compare=False)  # signs ``ca``'s certificates

    def issue_broker_cert(self, name: str, common_name: str) -> tuple[str, str]:
        """Another 127.0.0.1/localhost certificate from ``ca`` (a rotation): (cert, key)."""
        leaf = self.authority.issue_cert("127.0.0.1", "localhost", common_name=common_name)
        return _write_leaf(leaf, Path(self.ca).parent, name)

    def broker_config(self, client_auth: str = "none") -> dict:
        return {"tls_cert_file": self.broker_cert, "tls_key_file": self.broker_key,
                "tls_ca_file": self.ca, "tls_client_auth": client_auth}

    def client_context(self, client: ClientCert | None = None) -> ssl.SSLContext:
        return self.security(client).ssl_context()

    def security(self, client: ClientCert | None = None, ca: str | None = None) -> Security:
        return Security(protocol="SSL", ssl_cafile=ca or self.ca,
                        ssl_certfile=client.cert if client else None,
                        ssl_keyfile=client.key if client else None)


def _write_leaf(cert: trustme.LeafCert, directory: Path, name: str) -> tuple[str, str]:
    cert_path, key_path = directory / f"{name}.pem", directory / f"{name}-key.pem"
    cert_path.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    cert.private_key_pem.write_to_path(str(key_path))
    return str(cert_path), str(key_path)


def _client(ca: trustme.CA, directory: Path, name: str, unit: str,
            principal: str) -> ClientCert:
    leaf = ca.issue_cert(f"{name}@example.com", common_name=name, organization_name="acme",
                         organization_unit_name=unit)
    return ClientCert(*_write_leaf(leaf, directory, name), principal=principal)


def make_tls_files(directory: Path) -> TlsFiles:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    other.cert_pem.write_to_path(str(directory / "other-ca.pem"))
    broker_cert, broker_key = _write_leaf(
        ca.issue_cert("127.0.0.1", "localhost", common_name="broker"), directory, "broker")
    other_cert, other_key = _write_leaf(
        other.issue_cert("127.0.0.1", "localhost", common_name="impostor"), directory,
        "other-broker")
    return TlsFiles(
        ca=str(directory / "ca.pem"), broker_cert=broker_cert, broker_key=broker_key,
        alice=_client(ca, directory, "alice", "eng", "User:CN=alice,OU=eng,O=acme"),
        bob=_client(ca, directory, "bob", "ops+dev", "User:CN=bob,OU=ops\\+dev,O=acme"),
        other_ca=str(directory / "other-ca.pem"), other_broker_cert=other_cert,
        other_broker_key=other_key, authority=ca)
