"""docs/security.md, sections "Metrics endpoint" and "etcd": the web config example loads
as the broker would load it, the hash-making command makes a hash that checks, and every
setting in the two tables is read from the environment variable and the flag they name.
(The etcd TOML example is run against a real TLS etcd in
tests/integration/test_etcd_tls.py.)"""

from __future__ import annotations

import re
import shlex
import ssl
import subprocess
import sys
from pathlib import Path

import bcrypt
import trustme

from tslog.broker.__main__ import parse_flags
from tslog.broker.config import load_config
from tslog.broker.metrics.web_config import load_web_config

DOC = Path(__file__).parents[3] / "docs" / "security.md"


def section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_the_web_config_example_loads(tmp_path):
    (example,) = blocks(section("Metrics endpoint"), "yaml")
    cert = trustme.CA().issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "metrics.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "metrics.key"))
    (tmp_path / "metrics-web.yml").write_text(example)
    web = load_web_config(str(tmp_path / "metrics-web.yml"))
    assert web.tls is not None and web.tls.minimum_version == ssl.TLSVersion.TLSv1_2
    assert web.tls.verify_mode == ssl.CERT_NONE
    assert set(web.users) == {"prometheus"}


def test_the_hash_command_makes_a_hash_that_checks(tmp_path):
    (command,) = blocks(section("Metrics endpoint"), r"sh")
    (tmp_path / "metrics-password").write_text("correct horse\n")
    argv = shlex.split(command.strip().replace("python3", shlex.quote(sys.executable), 1))
    assert argv[-2] == "<"
    with open(tmp_path / argv[-1], "rb") as stdin:
        hashed = subprocess.run(argv[:-2], stdin=stdin, capture_output=True, check=True,
                                cwd=tmp_path).stdout.strip()
    assert bcrypt.checkpw(b"correct horse", hashed)


def rows() -> list[tuple[str, str, str]]:
    text = section("Metrics endpoint") + section("etcd")
    return re.findall(r"^\| `(\w+)` \| `(TSLOG_\w+)` \| `(--[\w-]+)` \|", text, re.M)


def test_every_documented_setting_is_read_from_its_variable_and_its_flag():
    documented = rows()
    assert {key for key, _, _ in documented} == {
        "metrics_web_config_file", "etcd_ca_file", "etcd_cert_file", "etcd_key_file"}
    needs = {"metrics_web_config_file": {"metrics_listen": "127.0.0.1:9308"},
             "etcd_cert_file": {"etcd_key_file": "k.pem"},
             "etcd_key_file": {"etcd_cert_file": "c.pem"}}
    for key, variable, flag in documented:
        others = needs.get(key, {})
        environ = {variable: "/x.pem", **{f"TSLOG_{k.upper()}": v for k, v in others.items()}}
        config, ignored = load_config({}, None, environ)
        assert ignored == [] and getattr(config, key) == "/x.pem", key
        flags, _, _ = parse_flags([flag, "/y.pem"])
        config, _ = load_config({**flags, **others}, None, {})
        assert getattr(config, key) == "/y.pem", key
