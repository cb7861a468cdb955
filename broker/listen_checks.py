"""Checks of the addresses a broker listens on: parsing ``HOST:PORT``, protected mode (an
open listener beyond loopback needs a yes), and what the Kafka listener cannot be combined
with. Apart from ``config.py`` so that module stays one job (the settings and their layers);
``config.py`` re-exports ``parse_host_port``, which the rest of the broker imports from there.
Each check takes the config duck-typed and returns its problems as strings."""

from __future__ import annotations

import ipaddress


def parse_host_port(text: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` -> (host, port). Raises ValueError."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ValueError(f"{text!r} is not HOST:PORT")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"port {port} is out of range")
    return host.strip("[]"), port



def kafka_listener_problems(config) -> list[str]:
    """A clustered Kafka listener needs a fixed port: the other brokers advertise it."""
    if config.kafka_listen is None:
        return []
    problems = []
    if config.clustered and config.kafka_listen.endswith(":0"):
        problems.append("a clustered broker needs a fixed kafka_listen port (other brokers "
                        "advertise it in their Metadata)")
    return problems


def protected_mode_problems(config) -> list[str]:
    """Redis' protected mode: an open broker reachable beyond this host needs a yes.

    The authentication settings belong to the TLS and SCRAM parts; read with defaults so
    this check stands on its own. The metrics endpoint has its own authentication (its web
    config), checked here when it has none at all, and by ``metrics_protected_mode_problem``
    once the web config is read."""
    if config.allow_anonymous:
        return []
    problems = []
    if not client_authentication(config):
        for name in ("listen", "kafka_listen"):
            address = getattr(config, name, None)
            if address is not None:
                problems += _open_listener_problem(name, address)
    if getattr(config, "metrics_web_config_file", None) is None:
        problems += _open_metrics_problem(config, "no metrics_web_config_file")
    return problems


def metrics_protected_mode_problem(config, authenticates: bool) -> list[str]:
    """Protected mode for /metrics once its web config is read: ``authenticates`` says
    whether it asks for basic auth or a client certificate (TLS alone lets anyone read)."""
    if config.allow_anonymous or authenticates:
        return []
    return _open_metrics_problem(config, f"{config.metrics_web_config_file} asks for neither "
                                         "basic_auth_users nor a client certificate")


def _open_metrics_problem(config, why: str) -> list[str]:
    address = getattr(config, "metrics_listen", None)
    try:
        host, port = parse_host_port(address) if address is not None else ("127.0.0.1", 0)
    except ValueError:
        return []  # reported above
    if is_loopback(host):
        return []
    return [f"protected mode: metrics_listen = {address} serves /metrics to other hosts "
            f"without authentication ({why}), so anyone who can reach port {port} could read "
            f"topic and group names, rates and lags; set metrics_web_config_file with "
            f"basic_auth_users or RequireAndVerifyClientCert (docs/security.md), listen on "
            f"127.0.0.1, or set allow_anonymous = true (--allow-anonymous, "
            f"TSLOG_ALLOW_ANONYMOUS=true)"]


def _open_listener_problem(name: str, address: str) -> list[str]:
    try:
        host, port = parse_host_port(address)
    except ValueError:
        return []  # reported above
    if is_loopback(host):
        return []
    return [f"protected mode: {name} = {address} accepts clients from other hosts, and "
            f"no client authentication is configured (sasl_mechanisms, or tls_client_auth = "
            f"\"required\"), so anyone who can reach port {port} could read, write and delete "
            f"every topic; configure authentication (docs/security.md), listen on 127.0.0.1, "
            f"or set allow_anonymous = true (--allow-anonymous, TSLOG_ALLOW_ANONYMOUS=true) "
            f"to accept unauthenticated clients"]


def client_authentication(config) -> bool:
    """True when every client must authenticate: SASL on, or mutual TLS required."""
    return bool(getattr(config, "sasl_mechanisms", "").strip()
                or getattr(config, "tls_client_auth", "none") == "required")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and ``localhost`` are loopback; any other name or address is not
    (0.0.0.0 and :: are every address; a host name may resolve anywhere)."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
