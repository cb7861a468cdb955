"""No secret value in any deploy file: keys, passwords and password hashes live only in the
files deploy/make-secrets.sh writes to deploy/secrets/ (git-ignored, never committed), and
the deploy files name those files. A private key block, a bcrypt hash, or a password setting
whose value is neither a file path nor a reference fails here.
"""

from __future__ import annotations

import re

from tests.deploy.deployfiles import DEPLOY, DOCKERFILE, ROOT

PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
BCRYPT_HASH = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")
PASSWORD_SETTING = re.compile(r"(?i)([\w.-]*passw(?:or)?d[\w.-]*)[ \t]*[:=][ \t]*\"?([^\s\"]*)")


def deploy_files() -> list:
    files = [DOCKERFILE, ROOT / ".dockerignore"]
    for path in sorted(DEPLOY.rglob("*")):
        if path.is_file() and "secrets" not in path.relative_to(DEPLOY).parts[:1]:
            files.append(path)
    return files


def problems_in(text: str) -> list[str]:
    found = [m.group(0) for m in PRIVATE_KEY.finditer(text)]
    found += [m.group(0)[:7] + "..." for m in BCRYPT_HASH.finditer(text)]
    for match in PASSWORD_SETTING.finditer(text):
        key, value = match.groups()
        if value and "/" not in value and not key.lower().endswith("file"):
            found.append(f"{key} = <{len(value)} characters>")
    return found


def test_the_check_finds_what_it_looks_for():
    assert problems_in("-----BEGIN RSA PRIVATE KEY-----\nMII...")
    assert problems_in("prometheus: $2b$12$" + "a" * 53)
    assert problems_in("sasl.password=hunter2")
    assert problems_in('TSLOG_ADMIN_PASSWORD: "hunter2"')
    assert problems_in("password: hunter2")
    assert not problems_in("sasl.password.file=/run/secrets/admin-password")
    assert not problems_in("inter_broker_sasl_password_file = \"/run/secrets/broker-password\"")
    assert not problems_in("  metrics-password:\n    file: ./secrets/metrics-password")


def test_no_deploy_file_holds_a_key_a_hash_or_a_password():
    files = deploy_files()
    assert DEPLOY / "docker-compose.yml" in files and DEPLOY / "make-secrets.sh" in files
    found = {str(p.relative_to(ROOT)): problems_in(p.read_text()) for p in files}
    assert {name: problems for name, problems in found.items() if problems} == {}


def test_the_secrets_directory_is_ignored_by_git_and_docker(made_secrets):
    assert "deploy/secrets/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "deploy" in (ROOT / ".dockerignore").read_text().splitlines()
    # what make-secrets.sh writes would be caught if it were copied into a deploy file
    for name in ("ca.key", "broker-1.key", "metrics-web.yml", "admin.properties"):
        text = (made_secrets / name).read_text()
        if name.endswith((".key", ".yml")):
            assert problems_in(text), name
    passwords = [(made_secrets / f"{u}-password").read_text()
                 for u in ("admin", "broker", "healthcheck", "metrics")]
    for path in deploy_files():
        text = path.read_text()
        assert not any(p in text for p in passwords), path
