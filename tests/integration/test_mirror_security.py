"""docs/mirror.md's "## Security" example runs as written: a source with TLS and a SCRAM
login, a target with a SCRAM login as another user (its password in the environment), the
mirror copies every record and ``groups translate`` moves a group with the same two files;
then the same command with a wrong target password exits 1 with one line naming the target,
no traceback and no password. Only the addresses are replaced
(127.0.0.1:9092 by the source, 127.0.0.1:9093 by the target)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.mirror import as_source, end_offsets, read_all, source_offsets, wait_for
from tests.helpers.tls import Security, make_tls_files
from tslog.client import Admin, Producer, TopicPartition

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PASSWORD = "dc1-pw-3b8e0f"
TARGET_PASSWORD = "dc2-pw-71c4aa"
RECORDS = 300


def security_section() -> str:
    text = (ROOT / "docs" / "mirror.md").read_text(encoding="utf-8")
    start = text.index("\n## Security\n")
    return text[start:text.index("\n## ", start + 1)]


def blocks(kind: str, text: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", text, flags=re.S)


def scram_users(path: Path, user: str, password: str) -> dict:
    path.write_text(f"{user}:{password}\n")
    return {"sasl_mechanisms": "SCRAM-SHA-512", "sasl_bootstrap_users_file": str(path)}


@pytest.fixture
def clusters(tmp_path):
    certs = make_tls_files(tmp_path / "certs")
    source = BrokerProcess(tmp_path / "source", ssl_context=certs.client_context(),
                           config={**certs.broker_config("none"),
                                   **scram_users(tmp_path / "source-users", "dc1-mirror",
                                                 SOURCE_PASSWORD)})
    target = BrokerProcess(tmp_path / "target",
                           config=scram_users(tmp_path / "target-users", "dc2-mirror",
                                              TARGET_PASSWORD))
    try:
        yield source.start(), target.start(), certs
    finally:
        source.cleanup()
        target.cleanup()


def env_without_tslog() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TSLOG_")}
    return {**env, "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}"}


@pytest.mark.slow
def test_the_security_example_mirrors_and_a_wrong_target_password_is_one_line(clusters,
                                                                              tmp_path):
    source, target, certs = clusters
    section = security_section()
    source_properties, target_properties = blocks("properties", section)
    (tmp_path / "source.properties").write_text(source_properties)
    (tmp_path / "target.properties").write_text(target_properties)
    (tmp_path / "source-password.txt").write_text(SOURCE_PASSWORD + "\n")
    (tmp_path / "target-password.txt").write_text(TARGET_PASSWORD + "\n")
    (script,) = blocks("sh", section)
    script = (script.replace("127.0.0.1:9092", source.bootstrap)
              .replace("127.0.0.1:9093", target.bootstrap))

    source_login = Security(protocol="SASL_SSL", ssl_cafile=certs.ca,
                            sasl_mechanism="SCRAM-SHA-512", sasl_username="dc1-mirror",
                            sasl_password=SOURCE_PASSWORD)
    with Admin(source.bootstrap, security=source_login) as admin:
        admin.create_topic("orders", 2)
    with Producer(source.bootstrap, security=source_login) as producer:
        producer.send_batch("orders", [b"o%03d" % i for i in range(RECORDS)],
                            keys=[b"%d" % i for i in range(RECORDS)],
                            headers=[[("id", b"%d" % i)] if i % 7 == 0 else None
                                     for i in range(RECORDS)]).get(timeout=30)
    target_login = Security(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                            sasl_username="dc2-mirror", sasl_password=TARGET_PASSWORD)

    log_path = tmp_path / "mirror.log"
    with open(log_path, "wb") as log:
        mirror = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                                  env=env_without_tslog(), stdout=log, stderr=log,
                                  start_new_session=True)
    try:
        def copied() -> bool:
            try:
                return sum(end_offsets_secured(target.bootstrap, target_login).values()) \
                    == RECORDS
            except Exception:  # noqa: BLE001 - the topic may not exist yet
                return False
        wait_for(copied, "the mirror to copy every record", timeout_s=60)
    finally:
        os.killpg(mirror.pid, signal.SIGTERM)
        assert mirror.wait(30) == 0, log_path.read_text()
    on_source = read_all_secured(source.bootstrap, source_login)
    on_target = read_all_secured(target.bootstrap, target_login)
    assert sum(map(len, on_source.values())) == RECORDS
    for partition, records in on_source.items():
        assert as_source(on_target[partition]) == [
            (r.key, r.value, tuple(r.headers), r.create_time) for r in records]
        assert source_offsets(on_target[partition]) == [r.offset for r in records]
    logged = log_path.read_text() + source.log_text() + target.log_text()
    assert SOURCE_PASSWORD not in logged and TARGET_PASSWORD not in logged
    assert "authenticated as User:dc2-mirror" in target.log_text()

    # groups translate takes the same two files (the password from the environment here)
    with Admin(source.bootstrap, security=source_login) as admin:
        admin.alter_consumer_group_offsets("billing", {TopicPartition("orders", 0): 5})
    translate = subprocess.run(
        [sys.executable, "-m", "tslog.client.cli", "groups", "translate", "billing",
         "--source", source.bootstrap, "--target", target.bootstrap, "--execute",
         "--source-config", "source.properties", "--target-config", "target.properties"],
        cwd=tmp_path, env={**env_without_tslog(), "TSLOG_TARGET_SASL_PASSWORD": TARGET_PASSWORD},
        capture_output=True, text=True, timeout=60)
    assert translate.returncode == 0, translate.stderr
    with Admin(target.bootstrap, security=target_login) as admin:
        moved = admin.list_consumer_group_offsets("billing")
    assert {tp: meta.offset for tp, meta in moved.items()} == {TopicPartition("orders", 0): 5}

    (tmp_path / "target-password.txt").write_text("not-the-password\n")
    failed = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path,
                            env=env_without_tslog(), capture_output=True, text=True,
                            timeout=60)
    assert failed.returncode == 1
    lines = failed.stderr.strip().splitlines()
    (documented,) = re.findall(r"e\.g\. `(tslog-mirror: error: .*?)`", section, flags=re.S)
    documented = " ".join(documented.split()).replace("127.0.0.1:9093", target.bootstrap)
    assert lines[-1] == documented, failed.stderr
    assert "Traceback" not in failed.stderr and "not-the-password" not in failed.stderr
    assert [line for line in lines if "error" in line.lower()] == lines[-1:]


def end_offsets_secured(bootstrap: str, security: Security) -> dict[int, int]:
    return end_offsets(bootstrap, "orders", 2, security=security)


def read_all_secured(bootstrap: str, security: Security) -> dict[int, list]:
    return read_all(bootstrap, "orders", 2, security=security)
