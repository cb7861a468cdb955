"""ACLs that name a host (Kafka's ACL host field), against a real broker (issue 38, "what
Kafka users look for").

Goal: a binding limited to one client address applies to connections from that address
only, an allow from one host and a deny from another decide as Kafka's do, the command line
of docs/security.md's ACL section runs as written (``--host`` included), and bindings with
and without a host survive a restart. Method: SCRAM logins by hand over the raw wire from
127.0.0.1, 127.0.0.2 and 127.0.0.3 (all loopback), asking Metadata for a topic by name.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire
from tslog.client import AclBinding, AclBindingFilter, Admin
from tslog.client.errors import InvalidRequestError
from tslog.client.security import Security
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey
from tslog.protocol.sasl import ScramLogin

PASSWORDS = {"admin": "admin-host-Pw-1", "reader": "reader-host-Pw-2"}
DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("acl-hosts")
    (base / "users").write_text("".join(f"{u}:{p}\n" for u, p in PASSWORDS.items()))
    process = BrokerProcess(base / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-512", "sasl_bootstrap_users_file": base / "users",
        "authorizer_enabled": "true", "super_users": "User:admin"})
    process.start()
    with Admin(process.bootstrap, security=admin_login()) as admin:
        for topic in ("h1", "h2"):
            admin.create_topic(topic)
        admin.create_acls([
            AclBinding("User:reader", "topic", "h1", "Describe", host="127.0.0.2"),
            AclBinding("User:reader", "topic", "h2", "Describe"),
            AclBinding("User:reader", "topic", "h2", "Describe", "deny", host="127.0.0.3")])
    yield process
    process.cleanup()


def admin_login() -> Security:
    return Security(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                    sasl_username="admin", sasl_password=PASSWORDS["admin"])


def topic_code(broker, source: str, topic: str) -> int:
    """Log in as reader from ``source`` and ask Metadata for ``topic``: its error code."""
    with Wire(broker.host, broker.port, source=source) as wire:
        scram = ScramLogin("SCRAM-SHA-512", "reader", PASSWORDS["reader"])
        api, body = scram.first()
        while api is not None:
            api, body = scram.answer(wire.request(api, body))
        answer = wire.request(ApiKey.METADATA, {"topics": [topic]})
    [entry] = answer["topics"]
    return entry["error_code"]


def test_a_binding_with_a_host_applies_only_from_that_address(broker):
    assert topic_code(broker, "127.0.0.2", "h1") == ErrorCode.NONE
    assert topic_code(broker, "127.0.0.1", "h1") == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_a_deny_from_one_host_wins_over_an_allow_from_any(broker):
    assert topic_code(broker, "127.0.0.1", "h2") == ErrorCode.NONE
    assert topic_code(broker, "127.0.0.3", "h2") == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_hosts_are_listed_filtered_validated_and_survive_a_restart(broker):
    with Admin(broker.bootstrap, security=admin_login()) as admin:
        hosts = {(b.resource_name, b.permission, b.host)
                 for b in admin.describe_acls(AclBindingFilter(principal="User:reader"))}
        assert hosts == {("h1", "allow", "127.0.0.2"), ("h2", "allow", "*"),
                         ("h2", "deny", "127.0.0.3")}
        assert [b.host for b in admin.describe_acls(AclBindingFilter(host="127.0.0.3"))] == \
            ["127.0.0.3"]
        with pytest.raises(InvalidRequestError, match="not an IP address"):
            admin.create_acls([AclBinding("User:x", "topic", "t", "Read", host="a-name")])
    broker.restart()
    assert topic_code(broker, "127.0.0.2", "h1") == ErrorCode.NONE
    assert topic_code(broker, "127.0.0.1", "h1") == ErrorCode.TOPIC_AUTHORIZATION_FAILED


def test_the_documented_acl_commands_run_as_written(broker, tmp_path):
    text = DOC.read_text()
    section = text[text.index("\n## Authorization (ACLs)\n"):]
    block = section[section.index("```\ntslog acls add") + 4:]
    block = block[:block.index("```")]
    properties = tmp_path / "admin.properties"
    properties.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                          f"sasl.username=admin\nsasl.password={PASSWORDS['admin']}\n")
    outputs = []
    for line in block.strip().splitlines():
        args = shlex.split(line, comments=True)
        assert args[0] == "tslog"
        done = subprocess.run(
            [sys.executable, "-m", "tslog.client.cli", "--bootstrap", broker.bootstrap,
             "--command-config", str(properties), *args[1:]],
            capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (line, done.stderr)
        outputs.append(done.stdout)
    documented = re.search(r"lists such a binding as `(.*?)`", " ".join(text.split())).group(1)
    assert f"added: {documented}" in outputs[2]
