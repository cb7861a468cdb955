"""Certificate subjects mapped to principals (Kafka's ``ssl.principal.mapping.rules``), on a
real mutual-TLS broker with trustme certificates (issue 38, "what Kafka users look for").

Goal: the documented example: a rule written as for Kafka turns ``CN=alice,OU=eng,O=acme``
into ``User:alice``, which ``super_users`` and ACLs then name; a subject no rule maps is
refused with a log line; rules that do not parse stop the broker at start with one line
naming the setting.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.tls import make_tls_files
from tslog.client import Admin
from tslog.client.errors import ConnectionLostError

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def documented_rules() -> str:
    """The example of docs/security.md's "Mapping certificate subjects to principals"."""
    text = DOC.read_text()
    section = text[text.index("### Mapping certificate subjects to principals"):]
    (example,) = re.findall(r"```toml\n(.*?)```", section, flags=re.S)[:1]
    return tomllib.loads(example)["tls_principal_mapping_rules"]


RULES = documented_rules()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("mapping-certs"))


def test_a_mapped_subject_is_the_principal_acls_name_and_an_unmapped_one_is_refused(
        tmp_path, files):
    broker = BrokerProcess(tmp_path / "data", ssl_context=files.client_context(files.alice),
                           config={**files.broker_config("required"),
                                   "tls_principal_mapping_rules": RULES,
                                   "authorizer_enabled": "true", "super_users": "User:alice"})
    try:
        broker.start()
        with Admin(broker.bootstrap, security=files.security(files.alice)) as admin:
            admin.create_topic("mapped")  # only a super user may: alice's mapped name is
            assert "mapped" in admin.list_topics()
        log = broker.log_text()
        assert "authenticated as User:alice" in log
        with pytest.raises(ConnectionLostError):  # bob's OU matches no rule
            Admin(broker.bootstrap, security=files.security(files.bob),
                  request_timeout_ms=5000, retries=0)
        assert ("certificate subject CN=bob,OU=ops\\+dev,O=acme matches no "
                "tls_principal_mapping_rules rule; refusing the connection") in broker.log_text()
    finally:
        broker.cleanup()


def test_rules_that_do_not_parse_stop_the_broker_with_one_line(tmp_path, files):
    result = subprocess.run(
        [sys.executable, "-m", "tslog.broker", "--data-dir", str(tmp_path / "data"),
         "--listen", f"127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "TSLOG_TLS_PRINCIPAL_MAPPING_RULES": "RULE:(/x/"})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "tls_principal_mapping_rules: rule pattern '('" in line
