"""The client's sans-I/O SCRAM login (``protocol/sasl.py``) against the broker's exchange and
connection state (``security/``), in process: no sockets, so every branch is cheap to reach.

What a user would notice: the right password logs in and sets the principal; a wrong one and
an unknown user fail the same way, at the same step; a credential made from the client's
salted password (AlterUserScramCredentials) is the one scramp makes from the password; a
broker that does not know the keys cannot fake its final message; without SASL the handshake
says so and nothing else changes.
"""

from __future__ import annotations

import asyncio
import base64
import os

import pytest
import scramp

from tslog.broker.security import ANONYMOUS
from tslog.broker.security.credentials import CredentialStore, ScramCredential
from tslog.broker.security.sasl_session import SaslSession
from tslog.broker.security.scram import Authenticator
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey
from tslog.protocol.sasl import SaslFailure, ScramLogin, salted_password


class MemoryStore(CredentialStore):
    async def _store(self, users, names) -> None:
        pass  # kept in memory only


class OpenRegistry:
    """A connection registry without limits: what ``SaslSession`` tells of a login."""

    def authenticated(self, connection) -> None:
        connection.authenticated = True

    def principal_set(self, connection, principal: str) -> bool:
        connection.principal = principal
        return True


class FakeConnection:
    """What ``SaslSession`` uses of a ``BrokerConnection``."""

    def __init__(self) -> None:
        self.peer = "test:1"
        self.registry = OpenRegistry()
        self.shut = False

    def begin_shutdown(self) -> None:
        self.shut = True


def authenticator(mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512")) -> Authenticator:
    store = MemoryStore()
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        salt, salted = salted_password(mechanism, "right-password", 4096)
        store.users.setdefault("alice", {})[mechanism] = ScramCredential.derive(
            mechanism, salt, salted, 4096)
    return Authenticator(tuple(mechanisms), store, 10_000)


def run(session: SaslSession, login: ScramLogin) -> int:
    """Drive the login through the session; the number of requests it took."""
    api_key, body = login.first()
    sent = 0
    while api_key is not None:
        sent += 1
        api_key, body = login.answer(session.handle(api_key, body))
    return sent


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_right_password_logs_in_and_sets_the_principal(mechanism):
    connection = FakeConnection()
    session = SaslSession(authenticator(), connection)
    assert connection.authenticated is False and connection.principal == ANONYMOUS
    assert run(session, ScramLogin(mechanism, "alice", "right-password")) == 3
    assert connection.authenticated and connection.principal == "User:alice"
    assert not connection.shut


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("nobody", "right-password")])
def test_wrong_password_and_unknown_user_fail_alike(user, password, caplog):
    connection = FakeConnection()
    session = SaslSession(authenticator(), connection)
    login = ScramLogin("SCRAM-SHA-256", user, password)
    with pytest.raises(SaslFailure) as failed:
        run(session, login)
    assert failed.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert str(failed.value) == "authentication failed: unknown user or wrong password"
    assert login._step == 3  # both fail at the proof, after the same round trips
    assert connection.shut and not connection.authenticated
    assert f"authentication failed for user {user} (SCRAM-SHA-256)" in caplog.text
    assert password not in caplog.text


def test_the_salted_password_gives_scramps_own_credential():
    salt, salted = salted_password("SCRAM-SHA-512", "pässwörd", 4096, b"0123456789abcdef")
    ours = ScramCredential.derive("SCRAM-SHA-512", salt, salted, 4096)
    _, stored, server, _ = scramp.ScramMechanism("SCRAM-SHA-512").make_auth_info(
        "pässwörd", 4096, b"0123456789abcdef")
    assert (ours.stored_key, ours.server_key) == (stored, server)
    assert "stored" not in repr(ours) and "salt" not in repr(ours)


def test_a_broker_without_the_keys_cannot_fake_its_final_message():
    login = ScramLogin("SCRAM-SHA-256", "alice", "right-password")
    api_key, body = login.first()
    api_key, body = login.answer({"error_code": 0, "mechanisms": ["SCRAM-SHA-256"]})
    impostor = scramp.ScramMechanism("SCRAM-SHA-256")
    fake = impostor.make_server(lambda _: impostor.make_auth_info("other-password"))
    fake.set_client_first(bytes(body["auth_bytes"]).decode())
    api_key, body = login.answer({"error_code": 0,
                                  "auth_bytes": fake.get_server_first().encode()})
    with pytest.raises(scramp.ScramException):  # the impostor cannot check the proof ...
        fake.set_client_final(bytes(body["auth_bytes"]).decode())
    forged = b"v=" + base64.b64encode(os.urandom(32))  # ... nor sign its final message
    with pytest.raises(SaslFailure, match="failed the SCRAM check"):
        login.answer({"error_code": 0, "auth_bytes": forged})


def test_before_login_only_sasl_is_answered_by_the_session():
    connection = FakeConnection()
    session = SaslSession(authenticator(), connection)
    assert session.handle(ApiKey.METADATA, {"topics": None}) is None  # close now
    answer = session.handle(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": b"n,,n=alice,r=x"})
    assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE and connection.shut


def test_an_unknown_mechanism_is_refused_with_the_list():
    session = SaslSession(authenticator(("SCRAM-SHA-512",)), FakeConnection())
    answer = session.handle(ApiKey.SASL_HANDSHAKE, {"mechanism": "SCRAM-SHA-256"})
    assert answer == {"error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM),
                      "mechanisms": ["SCRAM-SHA-512"]}


def test_without_sasl_the_handshake_says_so_and_connections_are_anonymous():
    connection = FakeConnection()
    session = SaslSession(Authenticator((), None, 10_000), connection)
    assert connection.authenticated and connection.principal == ANONYMOUS
    assert session.handle(ApiKey.SASL_HANDSHAKE, {"mechanism": "SCRAM-SHA-256"}) == {
        "error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), "mechanisms": []}


def test_the_bootstrap_file_creates_missing_users_only(tmp_path):
    store = MemoryStore()
    store.users["alice"] = {"SCRAM-SHA-256": ScramCredential(b"s", b"k", b"k", 4096)}
    path = tmp_path / "users"
    path.write_text("# comment\n\nalice:new-password\nbob:bob:with:colons\n")
    assert asyncio.run(store.bootstrap(str(path))) == ["bob"]
    assert store.users["alice"]["SCRAM-SHA-256"].salt == b"s"  # never overwritten
    assert set(store.users["bob"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    session = SaslSession(Authenticator(("SCRAM-SHA-512",), store, 10_000), FakeConnection())
    run(session, ScramLogin("SCRAM-SHA-512", "bob", "bob:with:colons"))
    path.write_text("broken line without a colon\n")
    with pytest.raises(OSError, match="line 1: expected NAME:PASSWORD"):
        asyncio.run(store.bootstrap(str(path)))


def test_concurrent_changes_are_all_kept_and_survive_reopening(tmp_path):
    from tslog.broker.security.credentials import LocalCredentialStore

    credential = ScramCredential(b"salt", b"stored", b"server", 4096)

    async def create_many(store) -> None:
        await asyncio.gather(*(store.apply([], [(f"user{i}", "SCRAM-SHA-256", credential)])
                               for i in range(8)))
        await store.apply([("user3", "SCRAM-SHA-256")], [])

    asyncio.run(create_many(LocalCredentialStore(tmp_path)))
    reopened = LocalCredentialStore(tmp_path)
    assert sorted(reopened.users) == [f"user{i}" for i in range(8) if i != 3]
    assert reopened.lookup("user5", "SCRAM-SHA-256") == credential
