"""SASL/SCRAM end to end: real broker processes with ``sasl_mechanisms`` on.

Goal: what an operator and a user notice: the right password gets records through, a wrong
one (or an unknown user) is refused at once with a typed error and a broker log line that
never holds the password, a connection that does not log in gets nothing (and is closed),
users are managed through Admin and the CLI and survive a restart. One broker serves the
module (its bootstrap users file makes ``admin`` and ``alice``); each test uses its own
topics and users.
"""

from __future__ import annotations

import time

import pytest

from tests.helpers.broker_process import BrokerProcess
from tests.helpers.wire import Wire
from tslog.client import Admin, Consumer, Producer
from tslog.client.errors import (
    ResourceNotFoundError,
    SaslAuthenticationFailedError,
    UnacceptableCredentialError,
)
from tslog.client.security import Security
from tslog.protocol.messages import ApiKey

ADMIN_PASSWORD = "admin-Secret-4242"
ALICE_PASSWORD = "alice-Pa55word-xyz"
AUTH_TIMEOUT_MS = 1500


def scram(user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Security:
    return Security(protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username=user,
                    sasl_password=password)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("scram")
    users = base / "users"
    users.write_text(f"# bootstrap users\nadmin:{ADMIN_PASSWORD}\nalice:{ALICE_PASSWORD}\n")
    process = BrokerProcess(base / "data", config={
        "sasl_mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl_authentication_timeout_ms": AUTH_TIMEOUT_MS,
        "sasl_bootstrap_users_file": users})
    process.start()
    yield process
    process.cleanup()


def wait_for_log(broker: BrokerProcess, text: str, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        log = broker.log_text()
        if text in log:
            return log
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in the broker log:\n{broker.log_text()[-3000:]}")


def round_trip(broker, security, topic: str) -> list[bytes]:
    with Admin(broker.bootstrap, security=scram("admin", ADMIN_PASSWORD)) as admin:
        admin.create_topic(topic, exist_ok=True)
    with Producer(broker.bootstrap, security=security) as producer:
        for i in range(20):
            producer.send(topic, b"v%d" % i)
        producer.flush()
    records = []
    with Consumer(broker.bootstrap, auto_offset_reset="earliest", security=security) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 20
        while len(records) < 20 and time.monotonic() < deadline:
            records += consumer.poll(200)
    return [record.value for record in records]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_producer_and_consumer_log_in_and_round_trip(broker, mechanism):
    values = round_trip(broker, scram("alice", ALICE_PASSWORD, mechanism),
                        f"scram-{mechanism.lower()}")
    assert values == [b"v%d" % i for i in range(20)]
    wait_for_log(broker, "authenticated as User:alice")


@pytest.mark.parametrize("user, password", [("alice", "not-her-password-123"),
                                            ("mallory", "whatever-password-987")])
def test_a_wrong_password_or_unknown_user_is_refused_at_once_and_logged_without_it(
        broker, user, password):
    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError) as refused:
        with Admin(broker.bootstrap, security=scram(user, password)) as admin:
            admin.list_topics()
    assert time.monotonic() - started < 5  # not retried until a timeout
    assert "unknown user or wrong password" in str(refused.value)  # the same for both
    assert password not in str(refused.value)
    log = wait_for_log(broker, f"authentication failed for user {user} (SCRAM-SHA-512)")
    assert password not in log


def test_a_request_before_authentication_closes_the_connection(broker):
    with Wire(broker.host, broker.port) as wire:
        assert wire.request(ApiKey.API_VERSIONS, {})["error_code"] == 0  # allowed
        wire.send(ApiKey.METADATA, {"topics": None})
        assert wire.is_closed_by_peer()
    wait_for_log(broker, "METADATA request before authentication; closing")


def test_a_connection_that_does_not_log_in_in_time_is_closed(broker):
    with Wire(broker.host, broker.port) as wire:
        started = time.monotonic()
        wire.request(ApiKey.SASL_HANDSHAKE, {"mechanism": "SCRAM-SHA-256"})
        assert wire.is_closed_by_peer()
        assert AUTH_TIMEOUT_MS / 1000 - 0.2 < time.monotonic() - started < 8
    wait_for_log(broker, f"not authenticated within {AUTH_TIMEOUT_MS} ms; closing")


def test_users_are_created_rotated_listed_and_deleted_through_admin(broker):
    with Admin(broker.bootstrap, security=scram("admin", ADMIN_PASSWORD)) as admin:
        admin.create_user("bob", "bob-first-password", iterations=4096)
        admin.create_user("bob", "bob-first-password", mechanism="SCRAM-SHA-256")
        assert {"admin", "alice", "bob"} <= set(admin.list_users())
        described = admin.describe_users(["bob"])["bob"]
        assert {(c.mechanism, c.iterations) for c in described} == {
            ("SCRAM-SHA-256", 8192), ("SCRAM-SHA-512", 4096)}
        with pytest.raises(UnacceptableCredentialError):
            admin.create_user("carol", "carol-password", iterations=100)
        assert round_trip(broker, scram("bob", "bob-first-password"), "bob-topic")
        admin.create_user("bob", "bob-rotated-password")  # rotation: an upsert
        with pytest.raises(SaslAuthenticationFailedError):
            with Admin(broker.bootstrap, security=scram("bob", "bob-first-password")) as old:
                old.list_topics()
        with Admin(broker.bootstrap, security=scram("bob", "bob-rotated-password")) as new:
            assert "bob-topic" in new.list_topics()
        admin.delete_user("bob")
        assert "bob" not in admin.list_users()
        with pytest.raises(ResourceNotFoundError):
            admin.delete_user("bob")
    with pytest.raises(SaslAuthenticationFailedError):
        with Admin(broker.bootstrap, security=scram("bob", "bob-rotated-password")) as gone:
            gone.list_topics()


def test_credentials_survive_a_restart_and_the_file_holds_no_password(broker):
    with Admin(broker.bootstrap, security=scram("admin", ADMIN_PASSWORD)) as admin:
        admin.create_user("dave", "dave-password-77")
    broker.restart()
    stored = (broker.data_dir / "__meta" / "scram_credentials.json").read_text()
    assert "dave" in stored and "dave-password-77" not in stored
    assert ADMIN_PASSWORD not in stored
    with Admin(broker.bootstrap, security=scram("dave", "dave-password-77")) as dave:
        dave.list_topics()
    assert "sasl_bootstrap_users_file: 0 new users" in broker.log_text()
