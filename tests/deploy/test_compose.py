"""deploy/docker-compose.yml names ports, paths and services that exist: every broker listens
where its published port and advertised address point, keeps its data on its volume, reaches
etcd where etcd listens, and is scraped by the bundled Prometheus config on its metrics port.

`docker compose config` itself needs the compose plugin (absent here): deploy/check-compose.sh.

The brokers run secured (TLS, SCRAM, ACLs, etcd over TLS, /metrics over https): every secret
they name is a compose secret made from a file of deploy/make-secrets.sh's output directory
(deploy/secrets/, git-ignored), mounted where the setting points.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from tslog.broker.config import load_config, parse_host_port

from tests.deploy.deployfiles import DEPLOY, yaml_documents

COMPOSE = yaml_documents(DEPLOY / "docker-compose.yml")[0]
SERVICES = COMPOSE["services"]
BROKERS = {name: s for name, s in SERVICES.items() if s.get("image", "").startswith("tslog")}


def flag(command: list[str], name: str) -> str:
    values = [item.partition("=")[2] for item in command if item.startswith(f"--{name}=")]
    assert len(values) == 1, (name, command)
    return values[0]


def broker_config(service: dict):
    """The config the service's TSLOG_* environment gives the broker (every variable used)."""
    config, ignored = load_config({}, None,
                                  {k: str(v) for k, v in service["environment"].items()})
    assert ignored == [], f"variables the broker does not read: {ignored}"
    return config


def test_three_brokers_built_from_the_repository_dockerfile():
    assert sorted(BROKERS) == ["broker-1", "broker-2", "broker-3"]
    for service in BROKERS.values():
        context = (DEPLOY / service["build"]["context"]).resolve()
        assert (context / service["build"]["dockerfile"]).is_file()
        assert (context / "pyproject.toml").is_file()
    assert sorted(broker_config(s).node_id for s in BROKERS.values()) == [1, 2, 3]


def test_brokers_may_open_a_descriptor_per_partition_and_more():
    """README: a partition holds one descriptor; the compose file raises nofile as the
    systemd unit does (LimitNOFILE=1048576)."""
    for service in BROKERS.values():
        assert service["ulimits"]["nofile"] == 1048576


def test_each_broker_is_reachable_where_it_says_and_keeps_data_on_its_volume():
    published = set()
    for name, service in BROKERS.items():
        config = broker_config(service)
        _, listen_port = parse_host_port(config.listen)
        advertised_host, advertised_port = parse_host_port(config.advertised_listen)
        assert (advertised_host, advertised_port) == (name, listen_port)
        for mapping in service["ports"]:
            host_ip, host_port, container_port = mapping.split(":")
            assert host_ip == "127.0.0.1" and int(container_port) == listen_port
            published.add(int(host_port))
        volume, target = service["volumes"][0].split(":")[:2]
        assert target == config.data_dir and volume in COMPOSE["volumes"]
    assert len(published) == 3


def test_brokers_reach_etcd_where_etcd_listens():
    etcd = SERVICES["etcd"]
    client_port = urlsplit(flag(etcd["command"], "listen-client-urls")).port
    advertised = urlsplit(flag(etcd["command"], "advertise-client-urls"))
    assert (advertised.hostname, advertised.port) == ("etcd", client_port)
    for service in BROKERS.values():
        config = broker_config(service)
        assert config.etcd_addresses == [("etcd", client_port)]
        assert config.cluster_name == "tslog"
        assert "etcd" in service["depends_on"]
    data_dir = flag(etcd["command"], "data-dir")
    assert any(v.split(":")[1] == data_dir for v in etcd["volumes"])


def test_prometheus_scrapes_every_broker_metrics_port_with_the_alert_rules_mounted():
    prometheus = SERVICES["prometheus"]
    mounts = {}
    for volume in prometheus["volumes"]:
        source, target = volume.split(":")[:2]
        if source.startswith("./"):
            assert (DEPLOY / source).is_file(), source
            mounts[target] = DEPLOY / source
    config_path = flag(prometheus["command"], "config.file")
    config = yaml_documents(mounts[config_path])[0]
    for rule_file in config["rule_files"]:
        assert str(Path(config_path).parent / rule_file) in mounts
    targets = {t for job in config["scrape_configs"] if job["job_name"] == "tslog"
               for group in job["static_configs"] for t in group["targets"]}
    expected = set()
    for name, service in BROKERS.items():
        _, metrics_port = parse_host_port(broker_config(service).metrics_listen)
        expected.add(f"{name}:{metrics_port}")
    assert targets == expected


SECRETS_DIR = "./secrets/"


def mounted_secrets(service: dict) -> dict[str, str]:
    """{path in the container: compose secret name} for the service's ``secrets:``."""
    mounted = {}
    for entry in service.get("secrets", []):
        source, target = (entry, entry) if isinstance(entry, str) else (
            entry["source"], entry.get("target", entry["source"]))
        assert source in COMPOSE["secrets"], source
        mounted[target if target.startswith("/") else f"/run/secrets/{target}"] = source
    return mounted


def test_every_secret_is_a_file_make_secrets_makes(made_secrets):
    made = {p.name for p in made_secrets.iterdir()}
    for name, secret in COMPOSE["secrets"].items():
        assert set(secret) == {"file"}, name  # never an inline value or environment
        assert secret["file"].startswith(SECRETS_DIR), secret
        assert secret["file"][len(SECRETS_DIR):] in made, secret["file"]
    gitignore = (DEPLOY.parent / ".gitignore").read_text().splitlines()
    assert "deploy/secrets/" in gitignore


def test_brokers_run_tls_scram_and_acls_with_settings_pointing_at_mounted_secrets():
    for name, service in BROKERS.items():
        config = broker_config(service)
        mounted = mounted_secrets(service)
        assert config.allow_anonymous is False
        assert set(config.sasl_mechanism_list) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
        assert config.tls_client_auth == "requested"  # brokers present certificates, clients may
        assert config.authorizer_enabled and not config.allow_everyone_if_no_acl_found
        supers = config.super_users.split(";")
        assert "User:admin" in supers and f"User:{config.inter_broker_sasl_username}" in supers
        for setting in ("tls_cert_file", "tls_key_file", "tls_ca_file",
                        "sasl_bootstrap_users_file", "inter_broker_sasl_password_file",
                        "metrics_web_config_file", "etcd_ca_file", "etcd_cert_file",
                        "etcd_key_file"):
            assert getattr(config, setting) in mounted, (name, setting)
        # each broker its own certificate, named by its service name (make-secrets.sh SANs)
        assert mounted["/run/secrets/broker.pem"] == f"{name}.pem"
        assert mounted["/run/secrets/broker.key"] == f"{name}.key"
        check = " ".join(service["healthcheck"]["test"][1:])
        command_config = check.split("--command-config ")[1].split()[0]
        assert command_config in mounted
        assert "/run/secrets/healthcheck-password" in mounted


def test_etcd_serves_clients_over_tls_with_client_certificates():
    etcd = SERVICES["etcd"]
    mounted = mounted_secrets(etcd)
    assert urlsplit(flag(etcd["command"], "listen-client-urls")).scheme == "https"
    assert urlsplit(flag(etcd["command"], "advertise-client-urls")).scheme == "https"
    assert "--client-cert-auth" in etcd["command"]
    for option in ("cert-file", "key-file", "trusted-ca-file"):
        assert flag(etcd["command"], option) in mounted
    for option in ("listen-peer-urls", "initial-advertise-peer-urls"):
        assert urlsplit(flag(etcd["command"], option)).hostname == "127.0.0.1"


def test_prometheus_scrapes_over_https_with_basic_auth_from_secrets():
    prometheus = SERVICES["prometheus"]
    config_path = flag(prometheus["command"], "config.file")
    source = next(v.split(":")[0] for v in prometheus["volumes"]
                  if v.split(":")[1] == config_path)
    assert source == "./prometheus/prometheus-secured.yml"
    (job,) = yaml_documents(DEPLOY / source)[0]["scrape_configs"]
    assert job["scheme"] == "https"
    mounted = mounted_secrets(prometheus)
    base = Path(config_path).parent
    assert mounted[str(base / job["tls_config"]["ca_file"])] == "ca.pem"
    assert mounted[str(base / job["basic_auth"]["password_file"])] == "metrics-password"
