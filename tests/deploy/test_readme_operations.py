"""The README's "Operations" table of configuration keys is BrokerConfig as it is: every key,
its real default, and an environment variable name the broker actually reads. An operator
copying a key or a default from it gets what the table says.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib

from tslog.broker.config import BrokerConfig, load_config

from tests.deploy.deployfiles import DEPLOY, ROOT, yaml_documents


def operations_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Operations\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def config_rows() -> dict[str, tuple[str, str]]:
    """{key: (default cell, environment cell)} from the configuration table."""
    rows = {}
    for line in operations_section().splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \| (.+?) \| `([A-Z_<>]+)` \| .+ \|", line)
        if match:
            rows[match.group(1)] = (match.group(2), match.group(3))
    return rows


def defaults() -> dict[str, object]:
    values = {}
    for f in dataclasses.fields(BrokerConfig):
        value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        values["[log]" if f.name == "log" else f.name] = value
    return values


def test_every_config_key_is_documented_once_and_nothing_else():
    documented, real = set(config_rows()), set(defaults())
    assert not real - documented, f"add rows for {sorted(real - documented)} to README's " \
                                  "Operations table"
    assert not documented - real, f"README documents keys that do not exist: " \
                                  f"{sorted(documented - real)}"


def test_documented_defaults_are_the_real_defaults():
    for key, (cell, _) in config_rows().items():
        documented = None if cell == "unset" else tomllib.loads(f"v = {cell.strip('`')}")["v"]
        assert documented == defaults()[key], key


def sample_setting(key: str, default: object) -> tuple[str, object]:
    """(environment value, the value the broker should then have) for a key, not its default."""
    if key.endswith("listen") or key == "etcd_endpoints":
        return "127.0.0.1:7", "127.0.0.1:7"
    if key == "group_assignor":  # one of a fixed set
        return "range", "range"
    if key == "tls_client_auth":
        return "requested", "requested"
    if key == "group_session_timeout_ms":  # must stay above the heartbeat interval
        return "60000", 60000
    if key == "sasl_mechanisms":  # one of a fixed set
        return "SCRAM-SHA-256", "SCRAM-SHA-256"
    if key == "tls_principal_mapping_rules":  # Kafka's rule syntax
        return "RULE:^CN=(.*)$/$1/", "RULE:^CN=(.*)$/$1/"
    if isinstance(default, bool):
        return ("false", False) if default else ("true", True)
    if isinstance(default, int):
        return "7", 7
    if key == "data_dir":
        return "./elsewhere", "./elsewhere"
    return "other", "other"


# Settings valid only beside another: the other one's environment variable, set with it.
NEEDS = {"metrics_web_config_file": {"TSLOG_METRICS_LISTEN": "127.0.0.1:7"},
         "etcd_cert_file": {"TSLOG_ETCD_KEY_FILE": "k.pem"},
         "etcd_key_file": {"TSLOG_ETCD_CERT_FILE": "c.pem"},
         "tls_cert_file": {"TSLOG_TLS_KEY_FILE": "key.pem"},
         "tls_key_file": {"TSLOG_TLS_CERT_FILE": "cert.pem"},
         "tls_client_auth": {"TSLOG_TLS_CERT_FILE": "cert.pem", "TSLOG_TLS_KEY_FILE": "key.pem"}}


def test_documented_environment_variables_are_the_ones_the_broker_reads():
    for key, (_, environment) in config_rows().items():
        if key == "[log]":
            config, ignored = load_config({}, None, {"TSLOG_LOG_RETENTION_MS": "123456"})
            assert environment == "TSLOG_LOG_<NAME>" and config.log["retention.ms"] == "123456"
            continue
        value, expected = sample_setting(key, defaults()[key])
        config, ignored = load_config({}, None, {environment: value, **NEEDS.get(key, {})})
        assert ignored == [] and getattr(config, key) == expected, key


def test_documented_alerts_are_the_rules_with_their_hold_times():
    documented = {}
    for line in operations_section().splitlines():
        match = re.fullmatch(r"\| `(Tslog\w+)` \| .+ \| (\d+) m \|", line)
        if match:
            documented[match.group(1)] = f"{match.group(2)}m"
    groups = yaml_documents(DEPLOY / "prometheus" / "alerts.yml")[0]["groups"]
    rules = {rule["alert"]: rule["for"] for group in groups for rule in group["rules"]}
    assert documented == rules
