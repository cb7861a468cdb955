"""deploy/docker-compose.yml names ports, paths and services that exist: every broker listens
where its published port and advertised address point, keeps its data on its volume, reaches
etcd where etcd listens, and is scraped by the bundled Prometheus config on its metrics port.

`docker compose config` itself needs the compose plugin (absent here): deploy/check-compose.sh.
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


# These files listen on 0.0.0.0 with no client authentication yet, which protected mode
# refuses (docs/security.md); until they configure SCRAM/TLS, the broker they describe needs
# --allow-anonymous, which the check adds as the operator's flag.
OPERATOR_FLAGS = {"allow_anonymous": True}


def broker_config(service: dict):
    """The config the service's TSLOG_* environment gives the broker (every variable used)."""
    config, ignored = load_config(OPERATOR_FLAGS, None,
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
