"""A client cannot tell an unknown user from a real one, and credentials are private files
(issue 38, items 3 and 4).

Goal: what a client sees of a login (the server-first message's salt and iteration count,
the answer, how long it takes) is the same for a name that does not exist as for a user made
with the defaults, on every try, after a restart, and on every broker of a cluster; and the
files holding credentials or the decoy secret are mode 0600. Method: real brokers with
SCRAM on, logins by hand over the raw wire (scramp's client), and the Python client.
"""

from __future__ import annotations

import base64
import os
import statistics
import time

import pytest
import scramp

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire
from tslog.client import Admin
from tslog.client.errors import SaslAuthenticationFailedError
from tslog.client.security import Security
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

ADMIN_PASSWORD = "admin-enum-Pa55-1"


def scram(user: str, password: str) -> Security:
    return Security(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                    sasl_username=user, sasl_password=password)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("enum")
    (base / "users").write_text(f"admin:{ADMIN_PASSWORD}\n")
    process = BrokerProcess(base / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl_bootstrap_users_file": base / "users"})
    process.start()
    with Admin(process.bootstrap, security=scram("admin", ADMIN_PASSWORD)) as admin:
        admin.create_user("carol", "carol-Pa55word-9")  # the defaults: 8192 iterations
    yield process
    process.cleanup()


def server_first(broker, name: str, mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
    """The broker's first SCRAM message to a login as ``name``: its attributes (r, s, i)."""
    with Wire(broker.host, broker.port) as wire:
        assert wire.request(ApiKey.SASL_HANDSHAKE, {"mechanism": mechanism})["error_code"] == 0
        client = scramp.ScramClient([mechanism], name, "any password")
        body = wire.request(ApiKey.SASL_AUTHENTICATE,
                            {"auth_bytes": client.get_client_first().encode()})
        assert body["error_code"] == ErrorCode.NONE
        text = bytes(body["auth_bytes"]).decode()
    return dict(part.split("=", 1) for part in text.split(","))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_an_unknown_name_gets_the_salt_size_and_iterations_of_a_real_user(broker, mechanism):
    real, ghost = server_first(broker, "carol", mechanism), server_first(broker, "ghost",
                                                                         mechanism)
    assert ghost["i"] == real["i"] == "8192"
    assert len(base64.b64decode(ghost["s"])) == len(base64.b64decode(real["s"])) == 16
    assert server_first(broker, "ghost", mechanism)["s"] == ghost["s"]  # stable per name
    assert server_first(broker, "ghost2", mechanism)["s"] != ghost["s"]


def test_an_unknown_names_salt_survives_a_restart(broker):
    before = server_first(broker, "nobody-here")["s"]
    broker.restart()
    assert server_first(broker, "nobody-here")["s"] == before


def failed_login_s(broker, user: str) -> float:
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError) as raised:
        Admin(broker.bootstrap, security=scram(user, "not-the-password")).close()
    assert "unknown user or wrong password" in str(raised.value)
    return time.monotonic() - started


@pytest.mark.slow
def test_an_unknown_user_and_a_wrong_password_fail_alike_and_in_the_same_time(broker):
    unknown, wrong = [], []
    for _ in range(9):  # alternated, so drift on this shared machine hits both alike
        unknown.append(failed_login_s(broker, "ghost"))
        wrong.append(failed_login_s(broker, "carol"))
    spread = statistics.median(wrong)
    assert abs(statistics.median(unknown) - spread) < 0.25 * spread + 0.010, (unknown, wrong)


def mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_the_credentials_and_the_decoy_secret_are_mode_0600(broker):
    meta = broker.data_dir / "__meta"
    with Admin(broker.bootstrap, security=scram("admin", ADMIN_PASSWORD)) as admin:
        admin.create_user("erin", "erin-Pa55word-3")
    assert mode(meta / "scram_credentials.json") == 0o600
    assert mode(meta / "scram_decoy_secret") == 0o600
    (meta / "scram_credentials.json").chmod(0o644)  # as an older version left it
    broker.restart()
    assert mode(meta / "scram_credentials.json") == 0o600
    assert "scram_credentials.json was readable by other users" in broker.log_text()


@pytest.mark.slow
def test_every_broker_of_a_cluster_gives_an_unknown_name_the_same_salt(tmp_path, etcd):
    (tmp_path / "users").write_text(f"admin:{ADMIN_PASSWORD}\n")
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 2000,
        "sasl_mechanisms": "SCRAM-SHA-512", "sasl_bootstrap_users_file": tmp_path / "users"})
        for node in range(2)]
    try:
        for process in brokers:
            process.start()
        salts = {server_first(process, "ghost")["s"] for process in brokers}
        assert len(salts) == 1
    finally:
        for process in brokers:
            process.cleanup()
