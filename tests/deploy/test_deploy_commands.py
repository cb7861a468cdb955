"""Every deploy command the README's Docker/Kubernetes/systemd sections, docs/security.md's
"Deploying" section and the deploy files' headers show (docker, kubectl, systemctl,
deploy/make-secrets.sh) names things that exist: the compose file and its services, the
secrets mounted where `--command-config` points, the StatefulSet and its pod, the unit and its
reload. (deploy/make-secrets.sh itself runs in test_secured_compose_broker.py and conftest.)
No Docker, Kubernetes or systemd manager runs here, so these are checked by reading them.
"""

from __future__ import annotations

import re
import shlex

import pytest

from tslog.broker.config import BrokerConfig, load_config

from tests.deploy.deployfiles import (
    DEPLOY, DOCKERFILE, ROOT, dockerfile_instructions, env_values, final_stage, systemd_unit,
)
from tests.deploy.test_compose import BROKERS, SERVICES, mounted_secrets
from tests.deploy.test_kubernetes import BROKERS as STATEFULSET, CONTAINER, documented_secrets

PROGRAMS = ("docker ", "kubectl ", "systemctl ", "deploy/", "NAMESPACE=")


def section(text: str, start: str, end: str | None) -> str:
    begin = text.index(start)
    return text[begin:] if end is None else text[begin:text.index(end, begin + 1)]


def commands() -> list[tuple[str, str]]:
    """(where, command) for every command shown: indented blocks (continuations joined) and
    `inline code` (line breaks inside it joined), plus '#   ' lines of the deploy headers."""
    readme = section((ROOT / "README.md").read_text(), "### Docker\n", "## Metrics\n")
    docs = section((ROOT / "docs" / "security.md").read_text(), "## Deploying\n", None)
    found = []
    for where, text in (("README", readme), ("docs/security.md", docs)):
        joined = re.sub(r"\\\n\s*", "", text)
        for line in joined.splitlines():
            if line.startswith("    "):
                found.append((where, line.strip().split("  #")[0].strip()))
        for span in re.findall(r"`([^`]+)`", text):
            found.append((where, " ".join(span.split())))
    for path in (DEPLOY / "docker-compose.yml", DEPLOY / "kubernetes" / "kustomization.yaml",
                 DOCKERFILE, DEPLOY / "systemd" / "tslog-broker.service"):
        for line in path.read_text().splitlines():
            if line.startswith("#   "):
                found.append((path.name, line[4:].strip().split("  #")[0].strip()))
    return [(w, c) for w, c in found if c.startswith(PROGRAMS)]


def check_docker(command: list[str]) -> None:
    if command[1] == "build":
        assert command == ["docker", "build", "-t", "tslog", "."]
    elif command[1] in ("run", "exec"):
        if command[1] == "exec":
            assert command[2:4] == ["tslog", "tslog"]
            return
        env = env_values(final_stage(dockerfile_instructions(DOCKERFILE.read_text())))
        for i, word in enumerate(command):
            if word == "-e":
                key, _, value = command[i + 1].partition("=")
                env[key] = value
            if word == "-p":
                assert command[i + 1].startswith("127.0.0.1:")
        load_config({}, None, {k: v for k, v in env.items() if k.startswith("TSLOG_")})
    elif command[1] == "stop":  # docker stop -t 30: longer than the broker's grace period
        assert command[2] == "-t" and int(command[3]) * 1000 > BrokerConfig.shutdown_grace_ms
    elif command[1] == "compose":
        assert command[2:4] == ["-f", "deploy/docker-compose.yml"], command
        action, rest = command[4], command[5:]
        assert action in ("up", "exec", "restart", "down"), command
        if action in ("exec", "restart"):
            assert rest[0] in SERVICES
        if action == "exec":
            assert rest[1] == "tslog"
            if "--command-config" in rest:
                path = rest[rest.index("--command-config") + 1]
                assert path in mounted_secrets(BROKERS[rest[0]]), path
    else:
        pytest.fail(f"unchecked docker command {command}")


def check_kubectl(command: list[str]) -> None:
    if command[1:3] == ["create", "secret"] and len(command) <= 4:
        pass  # the name of the commands, in the text: kubectl create secret (generic)
    elif command[1:4] == ["create", "secret", "generic"]:
        assert command[4] in documented_secrets()
    elif command[1:] == ["apply", "-k", "deploy/kubernetes"]:
        pass
    elif command[1:] == ["rollout", "restart", f"statefulset/{STATEFULSET['metadata']['name']}"]:
        pass
    elif command[1] == "exec":
        pod = command[2]
        assert re.fullmatch(rf"{STATEFULSET['metadata']['name']}-\d+", pod)
        rest = command[command.index("--") + 1:]
        if rest[:2] == ["sh", "-c"]:  # kill -HUP 1: the broker is process 1 (exec, exec)
            assert rest[2] == "kill -HUP 1"
            assert CONTAINER["command"][2].startswith("exec env ")
        else:
            assert rest[0] == "tslog"
            path = rest[rest.index("--command-config") + 1]
            mount = next(m for m in CONTAINER["volumeMounts"] if m["name"] == "secrets")
            assert path.startswith(mount["mountPath"] + "/")
    else:
        pytest.fail(f"unchecked kubectl command {command}")


def check_systemctl(command: list[str]) -> None:
    unit = systemd_unit(DEPLOY / "systemd" / "tslog-broker.service")
    assert command[-1] in ("tslog-broker", "tslog-broker.service"), command
    if command[1] == "reload":
        assert dict(unit["Service"])["ExecReload"] == "/bin/kill -HUP $MAINPID"
    else:
        assert command[1] in ("restart", "daemon-reload", "enable"), command


def test_every_deploy_command_shown_is_checked():
    shown = commands()
    kinds = {command.split()[0] for _, command in shown}
    assert {"docker", "kubectl", "systemctl", "deploy/make-secrets.sh"} <= kinds
    for where, line in shown:
        if "<" in line:  # a placeholder: NAMESPACE=<namespace> deploy/make-secrets.sh
            line = re.sub(r"<[a-z]+>", "example", line)
        command = shlex.split(line)
        if command[0].startswith("NAMESPACE="):
            command = command[1:]
            if not command:
                continue  # NAMESPACE=... in the text
            assert command == ["deploy/make-secrets.sh"]
            assert "NAMESPACE" in (DEPLOY / "make-secrets.sh").read_text()
        program = command[0]
        if program == "docker":
            check_docker(command)
        elif program == "kubectl":
            check_kubectl(command)
        elif program == "systemctl":
            if "&&" in command:
                continue  # the unit header's install line: daemon-reload && enable --now
            check_systemctl(command)
        elif program == "deploy/secrets/":  # make-secrets.sh's output, never committed
            assert "deploy/secrets/" in (ROOT / ".gitignore").read_text().splitlines()
        else:
            assert (ROOT / program).exists(), (where, line)
