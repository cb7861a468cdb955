"""The broker's configuration: one frozen ``BrokerConfig``, built from four layers.

Layers, lowest first: the defaults below < a TOML file (``--config``) < ``TSLOG_*``
environment variables < command-line flags actually passed. Each layer is a flat mapping
from field name to value; the ``[log]`` TOML table (environment: ``TSLOG_LOG_<NAME>``, e.g.
``TSLOG_LOG_RETENTION_MS``) holds broker-wide topic defaults under Kafka's dotted names
(``retention.ms``), which every topic inherits unless it overrides them.

Ports: clients on ``listen`` (127.0.0.1:9092). Prometheus metrics are off unless
``metrics_listen`` is given (``--metrics-listen HOST:PORT``, ``TSLOG_METRICS_LISTEN`` or
``metrics_listen`` in the file); then ``http://HOST:PORT/metrics`` serves them.

Why so strict: a typo in a config file that silently becomes a default is a production
incident found weeks later. Unknown keys and bad values are collected and raised together in
one ``ConfigError``, so an operator fixes everything in one pass. Environment variables are the
exception: ``TSLOG_`` is shared with the client CLI (``TSLOG_BOOTSTRAP``), so an unknown
``TSLOG_*`` name is ignored (and reported by ``load_config``), except under ``TSLOG_LOG_``.
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import ipaddress
import re
import tomllib
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from .groups import ASSIGNORS, CoordinatorConfig
from .listen_checks import kafka_listener_problems, parse_host_port, protected_mode_problems
from .security.principal_mapping import MappingRulesError, mapper
from .storage.config import ConfigError, LogConfig

ENV_PREFIX = "TSLOG_"
ENV_LOG_PREFIX = "TSLOG_LOG_"
_MIB = 1024 * 1024
_SUBJECT = "broker configuration"  # ConfigError's message: "invalid broker configuration: ..."


@dataclass(frozen=True)
class BrokerConfig:
    data_dir: str = "./tslog-data"  # partition directories and __meta live here
    listen: str = "127.0.0.1:9092"  # HOST:PORT to accept clients on (port 0 = any free port)
    advertised_listen: str | None = None  # HOST:PORT put in Metadata; None = the bound address
    metrics_listen: str | None = None  # HOST:PORT serving /metrics to Prometheus; None = off
    # HOST:PORT speaking Kafka's wire protocol (docs/kafka.md); None = off. Port 0 = any free
    # port (single node only: a cluster publishes it in etcd for the others' Metadata).
    kafka_listen: str | None = None
    # Kafka's auto.create.topics.enable: a Kafka client's Metadata for a missing topic creates
    # it (num_partitions). Off, unlike Kafka: a typo would make a topic (docs/kafka.md).
    auto_create_topics_enable: bool = False
    # Prometheus exporter-toolkit web config (YAML): TLS and basic auth for /metrics
    metrics_web_config_file: str | None = None
    node_id: int = 0  # this broker's id in Metadata
    max_frame_bytes: int = 16 * _MIB  # largest request frame body accepted
    max_connections: int = 1000  # further connections are refused (TOO_MANY_CONNECTIONS)
    # Connection limits (docs/security.md), so one client cannot take every slot; 0 = off.
    # Per client IP: half of max_connections, so one host (a leaking client, a loop of
    # reconnects) always leaves the other half to everyone else, while a busy host (hundreds
    # of producers and consumers, each with a few connections per broker) still fits.
    max_connections_per_address: int = 500
    # Per authenticated principal (mutual TLS or SCRAM; User:ANONYMOUS is never counted):
    # half too, for the same reason, one user among many services.
    max_connections_per_principal: int = 500
    # Connections still in their SASL handshake (only with sasl_mechanisms): each lasts at
    # most sasl_authentication_timeout_ms, and a real login takes milliseconds, so a
    # quarter of max_connections rides out a reconnect storm, yet a flood of idle
    # handshakes leaves three quarters to the clients that log in.
    max_unauthenticated_connections: int = 250
    # ... and per client IP (issue 38): one address's idle logins leave the rest to others.
    max_unauthenticated_connections_per_address: int = 100
    # New connections that must log in, per second per client IP (a token bucket).
    max_connection_rate_per_address: int = 100
    # Protected mode (Redis'): with no client authentication (no sasl_mechanisms, and
    # tls_client_auth not "required"), a listen address other than loopback refuses to start
    # unless this is true: anyone reaching the port could read, write and delete every topic.
    allow_anonymous: bool = False
    max_in_flight_requests: int = 128  # per connection; reading pauses beyond this
    # Responses answered but not yet taken by the client's socket (bytes): per connection,
    # reading its requests pauses at this until the socket drains ...
    max_unsent_response_bytes: int = 8 * _MIB
    # ... and across all connections: at this, only connections holding nothing unsent
    # take another request
    max_total_unsent_response_bytes: int = 256 * _MIB
    connections_max_idle_ms: int = 600_000  # close a connection silent this long (ms)
    request_timeout_ms: int = 30_000  # upper bound on any wait inside one request (ms)
    fetch_max_bytes: int = 50 * _MIB  # cap on one Fetch response's records, whatever asked
    log_retention_check_interval_ms: int = 300_000  # how often retention runs (ms)
    log_checkpoint_interval_ms: int = 60_000  # how often recovery points are written (ms)
    shutdown_grace_ms: int = 10_000  # in-flight requests get this long to finish on SIGTERM
    # Sealed segments kept open for reads, broker-wide, shared evenly by the partitions:
    # descriptors of their .log files, and maps of their indexes (which hold no descriptor).
    # 0 = a quarter of the open-file limit / of vm.max_map_count (docs/storage-format.md).
    storage_open_files_max: int = 0
    storage_index_maps_max: int = 0
    idle_poll_us: int = 100  # keep polling this long after close-together requests; 0 = off
    test_clock_offset_ms: int = 0  # TESTS ONLY: shift the broker's wall clock by this (ms)
    num_partitions: int = 1  # partitions of a topic created with partitions = -1
    etcd_endpoints: str = ""  # "host:port,host:port" of etcd; empty = single node, no etcd
    # TLS to etcd: on when any of the three is set (no CA file = the system's CAs)
    etcd_ca_file: str | None = None  # PEM CAs to verify etcd with
    etcd_cert_file: str | None = None  # PEM client certificate for etcd's --client-cert-auth
    etcd_key_file: str | None = None  # its private key (with etcd_cert_file)
    cluster_name: str = "tslog"  # the cluster's key prefix in etcd (/<cluster_name>/...)
    broker_session_timeout_ms: int = 10_000  # etcd lease TTL: how long a dead broker stays
    replica_fetch_wait_max_ms: int = 500  # a follower's long poll at its leader (ms)
    unclean_leader_election_enable: bool = False  # elect an out-of-sync replica if none is in
    auto_leader_rebalance_enable: bool = True  # leadership returns to the preferred replica
    leader_replication_throttled_rate: int = 0  # bytes/s for catching-up replicas; 0 = none
    # Consumer groups (docs/groups.md), Kafka's group.consumer.* defaults:
    group_session_timeout_ms: int = 45_000  # a member silent this long is removed
    group_heartbeat_interval_ms: int = 5_000  # what members are told; < the session timeout
    group_rebalance_timeout_ms: int = 300_000  # to give partitions up before being removed
    group_assignor: str = "uniform"  # "uniform" (sticky, balanced) or "range" (Kafka's)
    group_max_size: int = 1_000  # members per group; a join beyond is refused
    # Authorization (docs/security.md): every request is checked against the ACLs.
    authorizer_enabled: bool = False
    super_users: str = ""  # "User:admin;User:CN=broker0": principals allowed everything
    allow_everyone_if_no_acl_found: bool = False  # a resource no ACL names: allowed to all
    # Authentication (docs/security.md): "SCRAM-SHA-256,SCRAM-SHA-512"; "" = no SASL
    sasl_mechanisms: str = ""
    sasl_authentication_timeout_ms: int = 10_000  # not logged in by then: closed
    # Largest request before login (Kafka's sasl.server.max.receive.size): bytes, not CPU.
    sasl_server_max_receive_size: int = 512 * 1024
    # A failed login is answered this much later (Kafka's same-named setting).
    connection_failed_authentication_delay_ms: int = 100
    sasl_bootstrap_users_file: str | None = None  # NAME:PASSWORD lines, created at start
    inter_broker_sasl_username: str | None = None  # this broker's SCRAM login to its peers
    inter_broker_sasl_password_file: str | None = None  # ... and the file of its password
    # TLS (docs/security.md): cert + key set = the client listener speaks TLS only, and
    # this broker dials its peers over TLS too, presenting that certificate
    tls_cert_file: str | None = None  # PEM certificate (chain) of this broker
    tls_key_file: str | None = None  # PEM private key of tls_cert_file
    tls_ca_file: str | None = None  # PEM CAs trusted for client and peer-broker certificates
    tls_client_auth: str = "none"  # client certificates: "none", "requested" or "required"
    # Certificate subject -> principal name (Kafka's ssl.principal.mapping.rules)
    tls_principal_mapping_rules: str = "DEFAULT"
    log: Mapping[str, Any] = field(default_factory=dict)  # [log]: broker-wide topic defaults

    def __post_init__(self) -> None:
        # Every problem at once: the values of the well-typed fields are checked too, with
        # the badly typed ones at their defaults so the checks can run (an operator fixing a
        # type error should not then meet the range errors one restart later).
        problems = _type_problems(self)
        problems += _value_problems(self if not problems else _with_defaults_for_bad_types(self))
        if problems:
            raise ConfigError(problems, _SUBJECT)
        object.__setattr__(self, "log", types.MappingProxyType(dict(self.log)))

    @property
    def log_config(self) -> LogConfig:
        """The LogConfig every topic starts from (defaults overlaid with ``[log]``)."""
        return LogConfig.from_mapping(self.log)

    @property
    def coordinator_config(self) -> CoordinatorConfig:
        """The consumer-group coordinator's settings (validated here, so this cannot fail)."""
        return CoordinatorConfig(
            session_timeout_ms=self.group_session_timeout_ms,
            heartbeat_interval_ms=self.group_heartbeat_interval_ms,
            rebalance_timeout_ms=self.group_rebalance_timeout_ms,
            assignor=self.group_assignor, group_size_max=self.group_max_size)

    @property
    def sasl_mechanism_list(self) -> tuple[str, ...]:
        """``sasl_mechanisms`` parsed (validated at construction); () = SASL is off."""
        return tuple(m.strip() for m in self.sasl_mechanisms.split(",") if m.strip())

    @property
    def listen_address(self) -> tuple[str, int]:
        return parse_host_port(self.listen)

    @property
    def etcd_addresses(self) -> list[tuple[str, int]]:
        """``etcd_endpoints`` parsed; empty in single-node mode."""
        return [parse_host_port(e.strip()) for e in self.etcd_endpoints.split(",") if e.strip()]

    @property
    def etcd_tls(self) -> bool:
        return any(f is not None for f in (self.etcd_ca_file, self.etcd_cert_file,
                                           self.etcd_key_file))

    @property
    def clustered(self) -> bool:
        return bool(self.etcd_endpoints.strip())

    def describe(self) -> dict[str, Any]:
        """The effective configuration as plain values, for the startup log line."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values["log"] = self.log_config.to_mapping()
        return values


_FIELDS = {f.name: f for f in dataclasses.fields(BrokerConfig)}


def _field_type(hint: Any) -> tuple[type, bool]:
    """(the type a field holds, whether None is allowed) from its annotation: ``int``,
    ``str | None``, ``Mapping[str, Any]``..."""
    optional = False
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        members = [member for member in typing.get_args(hint) if member is not type(None)]
        if len(members) != 1:
            raise TypeError(f"BrokerConfig supports one type or that type | None, not {hint}")
        hint, optional = members[0], True
    base = typing.get_origin(hint) or hint
    if base not in (str, int, bool, collections.abc.Mapping):
        raise TypeError(f"BrokerConfig has no parser for fields of type {hint}")
    return base, optional


# Field types come from the annotations, so a new field needs no entry in a table here. A
# str field whose default is not empty may not be set empty (an empty path or address is
# never meant); etcd_endpoints defaults to "" (single node), so it may.
_TYPES = {name: _field_type(hint) for name, hint in typing.get_type_hints(BrokerConfig).items()
          if name in _FIELDS}
_CLUSTER_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_POSITIVE = {
    "max_frame_bytes", "max_connections", "max_in_flight_requests", "connections_max_idle_ms",
    "request_timeout_ms", "fetch_max_bytes", "log_retention_check_interval_ms",
    "log_checkpoint_interval_ms", "num_partitions", "broker_session_timeout_ms",
    "replica_fetch_wait_max_ms", "max_unsent_response_bytes", "max_total_unsent_response_bytes",
    "group_session_timeout_ms", "group_heartbeat_interval_ms", "group_rebalance_timeout_ms",
    "group_max_size", "sasl_authentication_timeout_ms", "sasl_server_max_receive_size",
}


def _type_ok(name: str, value: Any) -> bool:
    base, optional = _TYPES[name]
    if value is None:
        return optional
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if base is str and value == "" and not optional:  # "" in an optional one: not HOST:PORT
        return _FIELDS[name].default == ""
    return isinstance(value, base)


def _with_defaults_for_bad_types(config: BrokerConfig) -> BrokerConfig:
    """A copy of ``config`` (not validated again) whose badly typed fields hold defaults."""
    typed = copy.copy(config)
    for name, field in _FIELDS.items():
        if not _type_ok(name, getattr(config, name)):
            default = (field.default if field.default is not dataclasses.MISSING
                       else field.default_factory())
            object.__setattr__(typed, name, default)
    return typed


def _type_problems(config: BrokerConfig) -> list[str]:
    return [f"{name} has the wrong type or is empty: {getattr(config, name)!r}"
            for name in _FIELDS if not _type_ok(name, getattr(config, name))]


def _value_problems(config: BrokerConfig) -> list[str]:
    problems = [f"{name} must be > 0" for name in sorted(_POSITIVE) if getattr(config, name) <= 0]
    if config.node_id < 0:
        problems.append("node_id must be >= 0")
    if config.shutdown_grace_ms < 0:
        problems.append("shutdown_grace_ms must be >= 0")
    if not 0 <= config.idle_poll_us <= 10_000:
        problems.append("idle_poll_us must be 0 (off) to 10000")
    if config.metrics_web_config_file is not None and config.metrics_listen is None:
        problems.append("metrics_web_config_file needs metrics_listen (there is no "
                        "metrics endpoint to secure)")
    for name in ("listen", "advertised_listen", "metrics_listen", "kafka_listen"):
        value = getattr(config, name)
        if value is not None:
            try:
                parse_host_port(value)
            except ValueError as exc:
                problems.append(f"{name}: {exc}")
    try:
        LogConfig.from_mapping(config.log)
    except ConfigError as exc:
        problems.append(f"[log]: {exc}")
    for name in ("max_connections_per_address", "max_connections_per_principal",
                 "max_unauthenticated_connections", "max_connection_rate_per_address",
                 "max_unauthenticated_connections_per_address"):
        if getattr(config, name) < 0:
            problems.append(f"{name} must be >= 0 (0 = no limit)")
    if config.leader_replication_throttled_rate < 0:
        problems.append("leader_replication_throttled_rate must be >= 0 (0 = no limit)")
    for name in ("storage_open_files_max", "storage_index_maps_max"):
        if getattr(config, name) < 0:
            problems.append(f"{name} must be >= 0 (0 = derived from the process's limits)")
    return (problems + _cluster_problems(config) + _group_problems(config)
            + protected_mode_problems(config) + _sasl_problems(config)
            + _tls_problems(config) + kafka_listener_problems(config))


def _sasl_problems(config: BrokerConfig) -> list[str]:
    """An unknown mechanism, or a replication login without its password, would fail
    later and quietly (every client, or every follower, refused): stop startup instead."""
    problems = [f"sasl_mechanisms: unknown mechanism {name!r} (SCRAM-SHA-256, SCRAM-SHA-512)"
                for name in config.sasl_mechanism_list
                if name not in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    if config.connection_failed_authentication_delay_ms < 0:
        problems.append("connection_failed_authentication_delay_ms must be >= 0 (0 = none)")
    if (config.sasl_mechanism_list and config.inter_broker_sasl_username is not None
            and config.inter_broker_sasl_password_file is None):
        problems.append("inter_broker_sasl_username needs inter_broker_sasl_password_file")
    return problems


def _tls_problems(config: BrokerConfig) -> list[str]:
    """Settings that cannot work together; whether the files load is checked at start."""
    problems = []
    if bool(config.tls_cert_file) != bool(config.tls_key_file):
        problems.append("tls_cert_file and tls_key_file go together: set both or neither")
    try:
        mapper(config.tls_principal_mapping_rules)
    except MappingRulesError as exc:
        problems.append(f"tls_principal_mapping_rules: {exc}")
    if config.tls_client_auth not in ("none", "requested", "required"):
        problems.append("tls_client_auth must be none, requested or required, got "
                        f"{config.tls_client_auth!r}")
    elif config.tls_client_auth != "none" and not config.tls_cert_file:
        problems.append("tls_client_auth needs TLS on the listener (tls_cert_file, tls_key_file)")
    elif config.tls_client_auth == "required" and not config.tls_ca_file:
        problems.append("tls_client_auth = required needs tls_ca_file (the CAs that sign "
                        "client certificates)")
    return problems


def _group_problems(config: BrokerConfig) -> list[str]:
    """A member told to heartbeat no sooner than its session ends would be removed between
    two heartbeats; an unknown assignor would fail at the first join, so both stop startup."""
    problems = []
    if config.group_heartbeat_interval_ms >= config.group_session_timeout_ms:
        problems.append(f"group_heartbeat_interval_ms ({config.group_heartbeat_interval_ms}) "
                        f"must be less than group_session_timeout_ms "
                        f"({config.group_session_timeout_ms})")
    if config.group_assignor not in ASSIGNORS:
        problems.append(f"group_assignor must be one of {', '.join(sorted(ASSIGNORS))}, "
                        f"got {config.group_assignor!r}")
    return problems


def _cluster_problems(config: BrokerConfig) -> list[str]:
    """Cluster settings matter only with etcd, but a bad one is reported either way."""
    problems = []
    if not _CLUSTER_NAME.fullmatch(config.cluster_name):
        problems.append("cluster_name must be 1-100 characters of [A-Za-z0-9._-]")
    try:
        addresses = config.etcd_addresses
    except ValueError as exc:
        problems.append(f"etcd_endpoints: {exc}")
        addresses = []
    if (config.etcd_cert_file is None) != (config.etcd_key_file is None):
        problems.append("etcd_cert_file and etcd_key_file go together: set both or neither")
    if len(addresses) > 1 and not all(_is_ip(host) for host, _ in addresses):
        problems.append("etcd_endpoints: with several endpoints each host must be an IP address")
    if addresses and not config.advertised_listen and config.listen.endswith(":0"):
        problems.append("a clustered broker needs a fixed listen port or advertised_listen "
                        "(other brokers and clients find it through etcd)")
    return problems


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


# -------------------------------------------------------------------------------- layering


def _coerce(name: str, value: Any, problems: list[str]) -> Any:
    """Turn a string from the environment or a flag into the field's type."""
    if not isinstance(value, str):
        return value
    base, optional = _TYPES[name]
    if base is str:
        return None if optional and value.strip().lower() in ("", "none") else value
    if base is bool:
        word = value.strip().lower()
        if word in ("true", "1", "yes"):
            return True
        if word in ("false", "0", "no"):
            return False
        problems.append(f"{name} must be true or false, got {value!r}")
        return None
    if base is int:
        try:
            return int(value)
        except ValueError:
            problems.append(f"{name} must be an integer, got {value!r}")
            return None
    return value  # a string for a table: the type check refuses it


def layer_from_toml(text: str, problems: list[str]) -> dict[str, Any]:
    """Parse a TOML document into a layer; unknown keys become problems."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"config file is not valid TOML: {exc}")
        return {}
    layer: dict[str, Any] = {}
    for key, value in document.items():
        if key == "log":
            if isinstance(value, dict):
                layer["log"] = dict(value)
            else:
                problems.append("[log] must be a table")
        elif key in _FIELDS:
            layer[key] = value
        else:
            problems.append(f"unknown config key {key!r}")
    return layer


def layer_from_env(environ: Mapping[str, str], problems: list[str],
                   ignored: list[str]) -> dict[str, Any]:
    """Collect ``TSLOG_<FIELD>`` and ``TSLOG_LOG_<NAME>`` variables into a layer."""
    layer: dict[str, Any] = {}
    log: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX):].lower()
        if name in _FIELDS and name != "log":
            layer[name] = _coerce(name, value, problems)
        elif key.startswith(ENV_LOG_PREFIX):
            log[key[len(ENV_LOG_PREFIX):].lower().replace("_", ".")] = value
        else:
            ignored.append(key)
    if log:
        layer["log"] = log
    return layer


def build_config(layers: list[Mapping[str, Any]]) -> BrokerConfig:
    """Overlay layers (lowest first) on the defaults; ``log`` tables merge key by key.

    Raises:
        ConfigError: every unknown key and bad value found, in one error.
    """
    merged: dict[str, Any] = {}
    log: dict[str, Any] = {}
    problems: list[str] = []
    for layer in layers:
        for key, value in layer.items():
            if key == "log":
                log.update(value)
            elif key in _FIELDS:
                merged[key] = _coerce(key, value, problems)
            else:
                problems.append(f"unknown config key {key!r}")
    try:
        LogConfig.from_mapping(log)
    except ConfigError as exc:
        problems.append(f"[log]: {exc}")
        log = {}
    try:  # the fields that parsed are checked too, so every problem shows at once
        config = BrokerConfig(**{k: v for k, v in merged.items() if v is not None
                                 or _TYPES[k][1]}, log=log)
    except ConfigError as exc:
        problems += exc.problems
    if problems:
        raise ConfigError(problems, _SUBJECT)
    return config


def load_config(flags: Mapping[str, Any], config_path: str | None,
                environ: Mapping[str, str]) -> tuple[BrokerConfig, list[str]]:
    """Build the effective config from a file path, the environment and passed flags.

    Returns:
        (config, names of ``TSLOG_*`` environment variables that were ignored).

    Raises:
        ConfigError: the file cannot be read, or any layer has unknown keys or bad values.
    """
    problems: list[str] = []
    ignored: list[str] = []
    layers: list[Mapping[str, Any]] = []
    if config_path is not None:
        try:
            with open(config_path, encoding="utf-8") as handle:
                layers.append(layer_from_toml(handle.read(), problems))
        except OSError as exc:
            problems.append(f"cannot read config file {config_path}: {exc.strerror}")
    layers.append(layer_from_env(environ, problems, ignored))
    layers.append(dict(flags))
    try:
        config = build_config(layers)
    except ConfigError as exc:
        raise ConfigError(problems + exc.problems, _SUBJECT) from None
    if problems:
        raise ConfigError(problems, _SUBJECT)
    return config, ignored
