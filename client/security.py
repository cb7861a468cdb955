"""How a client reaches a secured broker: one options object for every client.

Why one object: Producer, Consumer, Admin, the CLI and the Spark source all connect the same
way, and a user who has it working in one must not learn a second spelling in another. The
names follow Kafka's client properties (``security.protocol``, ``ssl.ca.location``,
``sasl.username`` ...), so a librdkafka or Spark config file carries over:
``Security.from_properties`` reads those names, ``Security.from_file`` a ``key=value``
properties file (the CLI's ``--command-config``).

Protocols, Kafka's four: ``PLAINTEXT`` (the default: nothing), ``SSL`` (TLS; a client
certificate when the broker asks for mutual TLS), ``SASL_PLAINTEXT`` (SCRAM over plain TCP:
the password is never sent, but the traffic is readable) and ``SASL_SSL`` (both).

The password never appears in ``repr``, in an error message or in a log line; a properties
file may name a file to read it from (``sasl.password.file``) so it need not sit beside the
other settings.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

# HTTP Basic, as the console's login and the broker's /metrics read it (one parser for both;
# the console imports the client's public modules only, so it takes it from here)
from tslog.protocol.http_basic import basic_credentials  # noqa: F401

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")

# Kafka/librdkafka property name -> field. Both spellings Kafka clients use are accepted.
_PROPERTY_FIELDS = {
    "security.protocol": "protocol",
    "ssl.ca.location": "ssl_cafile",
    "ssl.truststore.location": "ssl_cafile",
    "ssl.cafile": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.certfile": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.keyfile": "ssl_keyfile",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "sasl.password.file": "sasl_password_file",
}


class SecurityConfigError(ValueError):
    """The security settings cannot work together; the message says which and why (never
    the password)."""


@dataclass(frozen=True)
class Security:
    """A client's transport security. ``Security()`` is plain TCP, as before.

    Args:
        protocol: one of ``PROTOCOLS``.
        ssl_cafile: PEM file of the CAs that signed the broker's certificate; None = the
            system's trust store.
        ssl_certfile, ssl_keyfile: this client's certificate and key (mutual TLS).
        ssl_check_hostname: verify that the certificate names the host connected to.
        sasl_mechanism: one of ``SASL_MECHANISMS``.
        sasl_username, sasl_password: the SCRAM credentials.
    """

    protocol: str = "PLAINTEXT"
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: str = "SCRAM-SHA-512"
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise SecurityConfigError(
                f"security protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if self.sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise SecurityConfigError(
                    f"SASL mechanism {self.sasl_mechanism!r} is not one of "
                    f"{', '.join(SASL_MECHANISMS)}")
            if not self.sasl_username or self.sasl_password is None:
                raise SecurityConfigError(
                    f"security protocol {self.protocol} needs a SASL username and password")
        if self.ssl_keyfile and not self.ssl_certfile:
            raise SecurityConfigError("a TLS client key needs its certificate (ssl_certfile)")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client-side TLS context (None for plain TCP): TLS 1.2 at least, the broker's
        certificate verified against ``ssl_cafile`` (or the system's CAs)."""
        if not self.tls:
            return None
        try:
            context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ssl_cafile)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.check_hostname = self.ssl_check_hostname
            if self.ssl_certfile:
                context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise SecurityConfigError(f"cannot load the TLS files: {exc}") from None
        return context

    @classmethod
    def from_properties(cls, properties: Mapping[str, str],
                        password: str | None = None) -> Security:
        """Kafka's client property names (``security.protocol`` ...); unknown names are an
        error, so a typo does not silently connect without security. ``password``: the
        SASL password when the properties give none (the CLI's ``$TSLOG_SASL_PASSWORD``)."""
        values: dict[str, object] = {}
        password_file = None
        for name, raw in properties.items():
            key = _PROPERTY_FIELDS.get(name.strip())
            if key is None:
                raise SecurityConfigError(
                    f"unknown security property {name!r}; known: "
                    f"{', '.join(sorted(_PROPERTY_FIELDS))}")
            value = str(raw).strip()
            if key == "sasl_password_file":
                password_file = value
            elif key == "ssl_check_hostname":
                values[key] = value.lower() not in ("", "none", "false")
            elif key == "protocol":
                values[key] = value.upper()
            elif key == "sasl_mechanism":
                values[key] = value.upper()
            else:
                values[key] = value
        if password_file is not None and "sasl_password" not in values:
            values["sasl_password"] = read_secret_file(password_file)
        if password is not None and "sasl_password" not in values:
            values["sasl_password"] = password
        return cls(**values)

    @classmethod
    def from_file(cls, path: str | Path, password: str | None = None) -> Security:
        """A properties file: ``name=value`` lines, ``#`` comments (Kafka's
        ``--command-config`` format); ``password`` as in ``from_properties``."""
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise SecurityConfigError(f"cannot read {path}: {exc.strerror}") from None
        properties = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise SecurityConfigError(f"{path}:{number}: expected name=value")
            properties[name.strip()] = value.strip()
        return cls.from_properties(properties, password)

    def describe(self) -> dict[str, object]:
        """The settings as plain values for a log line, the password left out."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "sasl_password"}


def read_secret_file(path: str) -> str:
    """A password kept in a file of its own (a Docker/Kubernetes secret, a systemd
    credential): its content without the trailing newline."""
    try:
        return Path(path).read_text().rstrip("\r\n")
    except OSError as exc:
        raise SecurityConfigError(f"cannot read the password file {path}: {exc.strerror}") \
            from None


PLAINTEXT = Security()
