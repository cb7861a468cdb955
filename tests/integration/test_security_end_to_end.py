"""Issue 16's story with every part on at once: one broker with SASL/SCRAM and the authorizer,
an admin (a super user) and a reader logged in by password. The reader, allowed only Read on
the prefix ``a``, consumes ``a1`` but cannot produce to it, does not see ``b1``, and its
delete changes nothing; a wrong password gets nowhere; no password reaches the log."""

from __future__ import annotations

import time

import pytest

from tslog.client import AclBinding, Admin, Consumer, Producer, TopicPartition
from tslog.client.errors import SaslAuthenticationFailedError, TopicAuthorizationFailedError
from tslog.client.security import Security

pytestmark = pytest.mark.timeout(120)

PASSWORDS = {"admin": "admin-pw-5d1e7c", "reader": "reader-pw-9a0b3f"}


def scram(user: str, password: str | None = None) -> Security:
    return Security(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                    sasl_username=user, sasl_password=password or PASSWORDS[user])


@pytest.fixture
def secured(broker_factory, tmp_path):
    users = tmp_path / "users"
    users.write_text("".join(f"{name}:{password}\n" for name, password in PASSWORDS.items()))
    return broker_factory(env={"TSLOG_SASL_MECHANISMS": "SCRAM-SHA-256,SCRAM-SHA-512",
                               "TSLOG_SASL_BOOTSTRAP_USERS_FILE": str(users),
                               "TSLOG_AUTHORIZER_ENABLED": "true",
                               "TSLOG_SUPER_USERS": "User:admin"})


def test_a_scram_reader_with_read_on_a_prefix(secured):
    admin_login, reader_login = scram("admin"), scram("reader")
    with Admin(secured.bootstrap, security=admin_login) as admin:
        for name in ("a1", "b1"):
            admin.create_topic(name)
        admin.create_acls([AclBinding("User:reader", "topic", "a", "Read",
                                      pattern_type="prefixed")])
    with Producer(secured.bootstrap, security=admin_login) as producer:
        for topic in ("a1", "b1"):
            producer.send(topic, f"{topic}-v".encode()).get(timeout=20)

    with Consumer(secured.bootstrap, security=reader_login,
                  auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("a1", 0)])
        values, deadline = [], time.monotonic() + 20
        while not values and time.monotonic() < deadline:
            values += [r.value for r in consumer.poll(timeout_ms=500)]
    assert values == [b"a1-v"]
    with Producer(secured.bootstrap, security=reader_login, acks=1) as producer:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("a1", b"not allowed").get(timeout=20)
    with Admin(secured.bootstrap, security=reader_login) as admin:
        assert admin.list_topics() == ["a1"]  # b1 is hidden from the reader
        with pytest.raises(TopicAuthorizationFailedError):
            admin.delete_topic("a1")
    with Admin(secured.bootstrap, security=admin_login) as admin:
        assert sorted(admin.list_topics()) == ["a1", "b1"]  # the denied delete changed nothing
        assert admin.list_offsets({TopicPartition("a1", 0): -1})[TopicPartition("a1", 0)].offset == 1

    started = time.monotonic()
    with pytest.raises(SaslAuthenticationFailedError):
        with Admin(secured.bootstrap, security=scram("reader", "guessed-password")) as admin:
            admin.list_topics()
    assert time.monotonic() - started < 5  # refused at once, not retried
    log = secured.log_text()
    assert "authenticated as User:reader" in log
    assert "authentication failed for user reader" in log
    assert not any(secret in log for secret in (*PASSWORDS.values(), "guessed-password"))
