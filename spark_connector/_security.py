"""The reader's security options, under the names Spark's Kafka source uses.

Spark's Kafka source passes ``kafka.``-prefixed options to the Kafka client; the same names
here build one ``tslog.client.Security`` that the planner's Admin and every task's
``BrokerSocket`` connect with:

- ``kafka.security.protocol``: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
- ``kafka.ssl.truststore.location`` (or ``kafka.ssl.ca.location``): the CA bundle, **PEM**
  here (Kafka's JKS/PKCS12 truststores are not read: convert with ``keytool``/``openssl``).
- ``kafka.ssl.keystore.location`` (or ``kafka.ssl.certificate.location``): the client
  certificate, PEM; ``kafka.ssl.key.location`` its key (default: the same file, a PEM holding
  both).
- ``kafka.ssl.endpoint.identification.algorithm``: ``https`` (default) or empty to skip the
  host name check.
- ``kafka.sasl.mechanism``, ``kafka.sasl.username``, ``kafka.sasl.password`` (or
  ``kafka.sasl.password.file``), or ``kafka.sasl.jaas.config`` in Kafka's ScramLoginModule
  form (``... required username="u" password="p";``).

The password lives only in ``Security`` (left out of its repr); Spark redacts option values
whose key or value matches ``spark.redaction.regex`` (``password``) in plans and the UI.
"""

from __future__ import annotations

import re

from tslog.client.security import Security, SecurityConfigError

# option (lower case, as Spark hands them over) -> Kafka client property
_PROPERTIES = {
    "kafka.security.protocol": "security.protocol",
    "kafka.ssl.truststore.location": "ssl.ca.location",
    "kafka.ssl.ca.location": "ssl.ca.location",
    "kafka.ssl.keystore.location": "ssl.certificate.location",
    "kafka.ssl.certificate.location": "ssl.certificate.location",
    "kafka.ssl.key.location": "ssl.key.location",
    "kafka.ssl.endpoint.identification.algorithm": "ssl.endpoint.identification.algorithm",
    "kafka.sasl.mechanism": "sasl.mechanism",
    "kafka.sasl.username": "sasl.username",
    "kafka.sasl.password": "sasl.password",
    "kafka.sasl.password.file": "sasl.password.file",
}
SECURITY_OPTIONS = frozenset(_PROPERTIES) | {"kafka.sasl.jaas.config"}
_JAAS_VALUE = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _from_jaas(text: str) -> dict[str, str]:
    """``username``/``password`` of a ScramLoginModule line (a password with quotes in it
    is written escaped: ``\\"``)."""
    found = {name: re.sub(r"\\(.)", r"\1", value) for name, value in _JAAS_VALUE.findall(text)}
    if "ScramLoginModule" not in text or set(found) != {"username", "password"}:
        raise SecurityConfigError(
            "option kafka.sasl.jaas.config must be a ScramLoginModule line with a quoted "
            "username and password")
    return {f"sasl.{name}": value for name, value in found.items()}


def security_from_options(options: dict) -> Security | None:
    """None when no security option is given (plain TCP, as before).

    Raises:
        SecurityConfigError: the options do not work together (the message names them,
            never the password).
    """
    given = {key: value for key, value in options.items()
             if key in SECURITY_OPTIONS and value is not None}
    if not given:
        return None
    properties = {_PROPERTIES[key]: value for key, value in given.items() if key in _PROPERTIES}
    if "kafka.sasl.jaas.config" in given:
        properties.update(_from_jaas(given["kafka.sasl.jaas.config"]))
    if "ssl.certificate.location" in properties and "ssl.key.location" not in properties:
        properties["ssl.key.location"] = properties["ssl.certificate.location"]
    return Security.from_properties(properties)
