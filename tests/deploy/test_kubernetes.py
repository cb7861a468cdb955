"""deploy/kubernetes/ parses as YAML and its names point at things that exist: Services select
the broker pods and target ports the containers declare, the ports are the ones the broker's
config listens on, the data volume is mounted where data_dir points, probes and the scrape
annotations and ServiceMonitor hit declared ports, and the command runs the broker's console
script with the mounted config file.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from tslog.broker.config import parse_host_port
from tslog.client import Admin
from tslog.client.security import Security

from tests.deploy.deployfiles import ROOT, broker_config_from_toml, kubernetes_objects
from tests.helpers.broker_process import free_port, probe

OBJECTS = kubernetes_objects()


def find(kind: str, name: str) -> dict:
    matches = [o for o in OBJECTS if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, (kind, name)
    return matches[0]


def of_kind(kind: str) -> list[dict]:
    return [o for o in OBJECTS if o["kind"] == kind]


def selects(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def container_ports(workload: dict) -> dict[str, int]:
    return {p["name"]: p["containerPort"]
            for c in workload["spec"]["template"]["spec"]["containers"] for p in c["ports"]}


BROKERS = find("StatefulSet", "tslog")
POD = BROKERS["spec"]["template"]
CONTAINER = POD["spec"]["containers"][0]
PORTS = container_ports(BROKERS)


def broker_toml() -> tuple[str, dict]:
    """(path the broker reads its config from, the TOML document the ConfigMap mounts there)."""
    command = " ".join(CONTAINER["command"])
    config_path = Path(re.search(r"--config (\S+)", command).group(1))
    mount = next(m for m in CONTAINER["volumeMounts"]
                 if config_path.is_relative_to(m["mountPath"]))
    volume = next(v for v in POD["spec"]["volumes"] if v["name"] == mount["name"])
    config_map = find("ConfigMap", volume["configMap"]["name"])
    text = config_map["data"][str(config_path.relative_to(mount["mountPath"]))]
    return str(config_path), text


def test_every_object_is_complete_and_uniquely_named():
    seen = set()
    for obj in OBJECTS:
        assert obj["apiVersion"] and obj["kind"] and obj["metadata"]["name"]
        key = (obj["kind"], obj["metadata"]["name"])
        assert key not in seen, key
        seen.add(key)
    kinds = {o["kind"] for o in OBJECTS}
    assert {"StatefulSet", "Service", "ConfigMap", "PodDisruptionBudget",
            "ServiceMonitor"} <= kinds


def test_the_config_map_holds_a_valid_broker_config_matching_the_pod():
    _, text = broker_toml()
    config = broker_config_from_toml(text)
    assert parse_host_port(config.listen) == ("0.0.0.0", PORTS["client"])
    assert parse_host_port(config.metrics_listen) == ("0.0.0.0", PORTS["metrics"])
    data_mount = next(m for m in CONTAINER["volumeMounts"] if m["name"] == "data")
    assert data_mount["mountPath"] == config.data_dir
    claims = [t["metadata"]["name"] for t in BROKERS["spec"]["volumeClaimTemplates"]]
    assert claims == ["data"]


def test_the_command_runs_the_console_script_with_a_node_id_per_pod():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    command = CONTAINER["command"]
    assert command[:2] == ["/bin/sh", "-c"]
    assert "exec env TSLOG_NODE_ID=" in command[2]
    assert re.search(r"\btslog-broker\b", command[2]) and "tslog-broker" in scripts
    env = {e["name"]: e for e in CONTAINER["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert env["TSLOG_ADVERTISED_LISTEN"]["value"].endswith(
        f".{BROKERS['spec']['serviceName']}.$(POD_NAMESPACE).svc.cluster.local:{PORTS['client']}")


def test_no_service_variables_are_injected_into_the_broker_environment():
    """Service links would add TSLOG_SERVICE_HOST, TSLOG_PORT_9092_TCP, ... for the Service
    named ``tslog``: names in the broker's own TSLOG_* namespace."""
    assert POD["spec"]["enableServiceLinks"] is False
    assert "tslog" in {s["metadata"]["name"] for s in of_kind("Service")}  # the clash is real


def test_services_select_broker_pods_and_target_declared_ports():
    headless = find("Service", BROKERS["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    labels = POD["metadata"]["labels"]
    assert BROKERS["spec"]["selector"]["matchLabels"] == labels
    for name in ("tslog-headless", "tslog"):
        service = find("Service", name)
        assert selects(service["spec"]["selector"], labels)
        for port in service["spec"]["ports"]:
            assert PORTS[port["targetPort"]] == port["port"]


def test_probes_scrape_annotations_and_service_monitor_use_declared_ports():
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert CONTAINER[probe]["tcpSocket"]["port"] in PORTS
    annotations = POD["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == PORTS["metrics"]
    monitor = find("ServiceMonitor", "tslog")
    scraped = [s for s in of_kind("Service")
               if selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])]
    assert [s["metadata"]["name"] for s in scraped] == ["tslog-headless"]
    service_ports = {p["name"] for p in scraped[0]["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["port"] in service_ports
        assert endpoint["path"] == annotations["prometheus.io/path"]


def test_disruption_budget_covers_the_brokers_and_leaves_a_quorum():
    budget = find("PodDisruptionBudget", "tslog")
    assert selects(budget["spec"]["selector"]["matchLabels"], POD["metadata"]["labels"])
    assert budget["spec"]["maxUnavailable"] == 1 < BROKERS["spec"]["replicas"]


def test_brokers_find_etcd_at_its_service_and_client_port():
    _, text = broker_toml()
    endpoints = broker_config_from_toml(text).etcd_endpoints.split(",")
    etcd = find("StatefulSet", "tslog-etcd")
    etcd_ports = container_ports(etcd)
    for endpoint in endpoints:
        host, port = parse_host_port(endpoint)
        service = find("Service", host)
        assert selects(service["spec"]["selector"], etcd["spec"]["template"]["metadata"]["labels"])
        assert any(p["port"] == port and etcd_ports[p["targetPort"]] == port
                   for p in service["spec"]["ports"])
    assert etcd["spec"]["serviceName"] == "tslog-etcd"
    mounts = {m["name"]: m["mountPath"] for m in etcd["spec"]["template"]["spec"]
              ["containers"][0]["volumeMounts"]}
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    assert f"--data-dir={mounts['data']}" in command


def documented_secrets() -> dict[str, dict[str, tuple[str, str]]]:
    """The ``kubectl create secret generic`` commands of kustomization.yaml's header:
    {secret: {key: ("file", path) or ("literal", value)}}."""
    secrets = {}
    header = (ROOT / "deploy" / "kubernetes" / "kustomization.yaml").read_text()
    for line in header.splitlines():
        if not line.startswith("#   kubectl create secret generic "):
            continue
        words = shlex.split(line[1:])
        keys = secrets.setdefault(words[4], {})
        for word in words[5:]:
            option, _, spec = word.partition("=")
            key, _, value = spec.partition("=")
            assert option in ("--from-file", "--from-literal"), word
            keys[key] = (option.removeprefix("--from-"), value)
    return secrets


def referenced_secrets() -> dict[str, set[str]]:
    """{secret name: keys} every object of the manifests reads."""
    found: dict[str, set[str]] = {}

    def walk(node):
        if isinstance(node, dict):
            if "secretName" in node:
                found.setdefault(node["secretName"], set()).update(
                    i["key"] for i in node.get("items", []))
            if "secret" in node and isinstance(node["secret"], dict) and "name" in node["secret"]:
                found.setdefault(node["secret"]["name"], set()).update(
                    i["key"] for i in node["secret"].get("items", []))
            if set(node) == {"name", "key"}:
                found.setdefault(node["name"], set()).add(node["key"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    for obj in OBJECTS:
        walk(obj)
    return found


def test_every_secret_the_manifests_read_is_made_by_the_documented_commands(made_secrets):
    documented = documented_secrets()
    referenced = referenced_secrets()
    assert set(referenced) == set(documented) == {
        "tslog-broker-tls", "tslog-broker-auth", "tslog-etcd-tls", "tslog-metrics-basic-auth"}
    for name, keys in referenced.items():
        assert keys <= set(documented[name]), (name, keys - set(documented[name]))
    for keys in documented.values():
        for kind, value in keys.values():
            if kind == "file":
                assert value.startswith("deploy/secrets/")
                assert (made_secrets / value.removeprefix("deploy/secrets/")).is_file(), value
            else:
                assert "password" not in value.lower() or value == "prometheus"


def test_the_config_map_turns_on_tls_scram_acls_and_etcd_tls_from_mounted_secrets():
    _, text = broker_toml()
    config = broker_config_from_toml(text)
    assert config.allow_anonymous is False and config.authorizer_enabled
    assert config.sasl_mechanism_list and config.tls_client_auth == "requested"
    assert f"User:{config.inter_broker_sasl_username}" in config.super_users.split(";")
    secrets_mount = next(m for m in CONTAINER["volumeMounts"] if m["name"] == "secrets")
    assert secrets_mount["readOnly"] is True
    volume = next(v for v in POD["spec"]["volumes"] if v["name"] == "secrets")
    paths = {f"{secrets_mount['mountPath']}/{item['path']}"
             for source in volume["projected"]["sources"] for item in source["secret"]["items"]}
    for setting in ("tls_cert_file", "tls_key_file", "tls_ca_file", "sasl_bootstrap_users_file",
                    "inter_broker_sasl_password_file", "metrics_web_config_file",
                    "etcd_ca_file", "etcd_cert_file", "etcd_key_file"):
        assert getattr(config, setting) in paths, setting
    for variable in CONTAINER["env"]:  # environment: only non-secret settings, no secret refs
        assert "secretKeyRef" not in str(variable) and "PASSWORD" not in variable["name"]
    etcd = find("StatefulSet", "tslog-etcd")["spec"]["template"]["spec"]["containers"][0]
    assert "--client-cert-auth" in etcd["command"]
    assert any(c == "--listen-client-urls=https://0.0.0.0:2379" for c in etcd["command"])
    endpoint = find("ServiceMonitor", "tslog")["spec"]["endpoints"][0]
    assert endpoint["scheme"] == "https" and "basicAuth" in endpoint
    assert POD["metadata"]["annotations"]["prometheus.io/scheme"] == "https"


def pod_secrets(made: Path, mounted: Path) -> None:
    """/run/secrets as the pod sees it (the projected volume of the documented Secrets),
    at ``mounted``, its files' /run/secrets paths rewritten to ``mounted``."""
    documented = documented_secrets()
    volume = next(v for v in POD["spec"]["volumes"] if v["name"] == "secrets")
    mounted.mkdir()
    for source in volume["projected"]["sources"]:
        keys = documented[source["secret"]["name"]]
        for item in source["secret"]["items"]:
            kind, value = keys[item["key"]]
            text = (made / value.removeprefix("deploy/secrets/")).read_text()
            (mounted / item["path"]).write_text(text.replace("/run/secrets", str(mounted)))


def test_the_pod_command_runs_one_broker_process_with_the_ordinal_plus_one_as_node_id(
        tmp_path, made_secrets):
    """The container command, run by /bin/sh as Kubernetes runs it, for pod ``tslog-2``: the
    broker gets node_id 3, takes the rest from the ConfigMap's file, and is the process that
    receives SIGTERM (``exec``), so a pod stop is a clean broker shutdown."""
    config_path, text = broker_toml()
    mounted = tmp_path / "run-secrets"
    pod_secrets(made_secrets, mounted)
    local_config = tmp_path / "broker.toml"
    local_config.write_text(text.replace("/run/secrets", str(mounted)))
    script = CONTAINER["command"][2].replace(config_path, str(local_config))
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    environment.update(
        PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}", POD_NAME="tslog-2",
        TSLOG_DATA_DIR=str(tmp_path / "data"), TSLOG_LISTEN=f"127.0.0.1:{port}",
        TSLOG_METRICS_LISTEN=f"127.0.0.1:{free_port()}", TSLOG_ETCD_ENDPOINTS="",
        TSLOG_ETCD_CA_FILE="", TSLOG_ETCD_CERT_FILE="", TSLOG_ETCD_KEY_FILE="")
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log_file:
        pod = subprocess.Popen(["/bin/sh", "-c", script], env=environment, cwd=tmp_path,
                               stdout=log_file, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        context = ssl.create_default_context(cafile=str(mounted / "ca.pem"))
        while not probe("127.0.0.1", port, ssl_context=context):
            assert pod.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        admin_login = Security.from_file(mounted / "admin.properties")
        with Admin(f"127.0.0.1:{port}", security=admin_login) as admin:
            admin.create_topic("events", partitions=1)
            assert admin.describe_topic("events").partitions[0].leader == 3
        pod.send_signal(signal.SIGTERM)
        assert pod.wait(30) == 0, log_path.read_text()
    finally:
        try:  # a broker the shell left behind (no exec) must not outlive the test
            os.killpg(pod.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        pod.wait(30)
