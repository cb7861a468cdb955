"""A denial reads as a denial, at once, everywhere (issue 38, items 5 and 6).

Goal: a user without rights is told so by the authorization error, not by "does not exist",
an empty poll, or a delivery timeout two minutes later: the idempotent Producer (Kafka >= 2.8:
Write on any topic implies the right to a producer id; without it CLUSTER_AUTHORIZATION_FAILED
surfaces at once), a Producer to a topic it may not see, Consumer.assign + poll, a group
subscriber's first poll, Admin.describe_topic, the Spark source's planning, and the CLI.

Method: one real broker for the module, TLS (trustme) and SCRAM on, the authorizer on, with
``admin`` (a super user), ``reader`` (Read on topic ``ta`` and group ``g``, nothing else),
``writer`` (Write on topic ``tw`` only) and ``nobody`` (no ACL at all); topics ``ta``, ``tb``,
``td`` (the reader may describe it, not read it) and ``tw`` exist.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

import pytest

from tests.helpers.broker_process import BrokerProcess, free_port
from tests.helpers.tls import make_tls_files
from tslog.client import AclBinding, Admin, Consumer, Producer, TopicPartition
from tslog.client.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
)
from tslog.client.security import Security
from tslog.spark_connector._options import parse_options
from tslog.spark_connector._planning import discover

PASSWORDS = {"admin": "admin-deny-Pw-1", "reader": "reader-deny-Pw-2",
             "writer": "writer-deny-Pw-3", "nobody": "nobody-deny-Pw-4"}
FAST_S = 5.0  # "at once": far below the 120 s delivery timeout and the 30 s request timeout


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return make_tls_files(tmp_path_factory.mktemp("deny-certs"))


@pytest.fixture(scope="module")
def broker(tmp_path_factory, files):
    base = tmp_path_factory.mktemp("deny")
    (base / "users").write_text("".join(f"{u}:{p}\n" for u, p in PASSWORDS.items()))
    process = BrokerProcess(base / "data", ssl_context=files.client_context(), config={
        **files.broker_config(), "sasl_mechanisms": "SCRAM-SHA-512",
        "metrics_listen": f"127.0.0.1:{free_port()}",
        "sasl_bootstrap_users_file": base / "users", "authorizer_enabled": "true",
        "super_users": "User:admin"})
    process.start()
    with Admin(process.bootstrap, security=login(files, "admin")) as admin:
        for topic in ("ta", "tb", "td", "tw"):
            admin.create_topic(topic)
        admin.create_acls([AclBinding("User:reader", "topic", "ta", "Read"),
                           AclBinding("User:reader", "topic", "td", "Describe"),
                           AclBinding("User:reader", "group", "g", "Read"),
                           AclBinding("User:writer", "topic", "tw", "Write")])
    yield process
    process.cleanup()


def login(files, user: str) -> Security:
    return Security(protocol="SASL_SSL", ssl_cafile=files.ca, sasl_mechanism="SCRAM-SHA-512",
                    sasl_username=user, sasl_password=PASSWORDS[user])


def test_the_idempotent_producer_of_a_user_without_write_fails_fast(broker, files):
    with Producer(broker.bootstrap, security=login(files, "reader")) as producer:
        started = time.monotonic()
        with pytest.raises(ClusterAuthorizationFailedError, match="producer id"):
            producer.send("ta", b"not allowed").get(timeout=60)
        assert time.monotonic() - started < FAST_S


def test_write_on_any_topic_gives_the_idempotent_producer_its_id(broker, files):
    with Producer(broker.bootstrap, security=login(files, "writer")) as producer:
        assert producer.send("tw", b"allowed").get(timeout=30).offset == 0


def test_a_producer_to_a_topic_it_may_not_see_is_denied_not_told_it_is_missing(broker, files):
    for idempotent in (True, False):
        with Producer(broker.bootstrap, security=login(files, "nobody"),
                      enable_idempotence=idempotent, acks="all") as producer:
            started = time.monotonic()
            with pytest.raises(TopicAuthorizationFailedError, match="'orders'"):
                producer.send("orders", b"x")  # its metadata lookup is denied
            assert time.monotonic() - started < FAST_S
            with pytest.raises(TopicAuthorizationFailedError, match="'orders'"):
                producer.partitions_for("orders")


def test_assign_and_poll_of_a_denied_topic_raises_at_once(broker, files):
    with Consumer(broker.bootstrap, security=login(files, "reader")) as consumer:
        consumer.assign([TopicPartition("tb", 0)])
        started = time.monotonic()
        with pytest.raises(TopicAuthorizationFailedError, match="'tb'"):
            consumer.poll(timeout_ms=10_000)
        assert time.monotonic() - started < FAST_S


def test_poll_of_a_topic_it_may_describe_but_not_read_raises_at_once(broker, files):
    with Consumer(broker.bootstrap, security=login(files, "reader")) as consumer:
        consumer.assign([TopicPartition("td", 0)])
        started = time.monotonic()
        with pytest.raises(TopicAuthorizationFailedError, match="fetch td-0: not authorized"):
            consumer.poll(timeout_ms=10_000)
        assert time.monotonic() - started < FAST_S


def test_a_group_subscribers_first_poll_raises_the_denial(broker, files):
    with Consumer(broker.bootstrap, group_id="g", security=login(files, "reader")) as consumer:
        consumer.subscribe(["tb"])
        started = time.monotonic()
        with pytest.raises(TopicAuthorizationFailedError, match="tb"):
            consumer.poll(timeout_ms=10_000)
        assert time.monotonic() - started < FAST_S


def test_a_group_member_denied_the_group_hears_it_at_its_first_poll(broker, files):
    with Consumer(broker.bootstrap, group_id="h", security=login(files, "reader")) as consumer:
        consumer.subscribe(["ta"])
        with pytest.raises(GroupAuthorizationFailedError, match="group 'h'"):
            consumer.poll(timeout_ms=10_000)


def test_describe_topic_of_a_denied_topic_is_denied_and_a_missing_one_missing(broker, files):
    with Admin(broker.bootstrap, security=login(files, "reader")) as admin:
        with pytest.raises(TopicAuthorizationFailedError, match="'tb'"):
            admin.describe_topic("tb")
        assert admin.describe_topic("ta").partitions
    with Admin(broker.bootstrap, security=login(files, "admin")) as admin:
        with pytest.raises(Exception, match="does not exist"):
            admin.describe_topic("no-such-topic")


def test_the_spark_sources_planning_says_denied(broker, files):
    options = {"bootstrap": broker.bootstrap, "topic": "tb",
               "kafka.security.protocol": "SASL_SSL", "kafka.ssl.truststore.location": files.ca,
               "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.username": "reader",
               "kafka.sasl.password": PASSWORDS["reader"]}
    opts = parse_options(options, streaming=False)
    with Admin(broker.bootstrap, security=opts.security) as admin:
        with pytest.raises(TopicAuthorizationFailedError, match="'tb'"):
            discover(admin, opts)


def test_the_cli_prints_a_clear_denial(broker, files, tmp_path):
    properties = tmp_path / "reader.properties"
    properties.write_text(f"security.protocol=SASL_SSL\nssl.ca.location={files.ca}\n"
                          "sasl.mechanism=SCRAM-SHA-512\nsasl.username=reader\n"
                          f"sasl.password={PASSWORDS['reader']}\n")
    result = subprocess.run(
        [sys.executable, "-m", "tslog.client.cli", "--bootstrap", broker.bootstrap,
         "--command-config", str(properties), "topics", "delete", "ta"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("tslog: error: ") and "'ta'" in line
    assert "not authorized" in line.lower() and "TOPIC_AUTHORIZATION_FAILED" in line
    with Admin(broker.bootstrap, security=login(files, "admin")) as admin:
        assert "ta" in admin.list_topics()  # the denied delete changed nothing


def metrics_text(broker) -> str:
    port = broker.env["TSLOG_METRICS_LISTEN"].rsplit(":", 1)[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


def test_denials_and_failed_logins_are_counted_with_bounded_labels(broker, files):
    with Admin(broker.bootstrap, security=login(files, "reader")) as admin:
        with pytest.raises(TopicAuthorizationFailedError):
            admin.delete_topic("ta")
    wrong = Security(protocol="SASL_SSL", ssl_cafile=files.ca, sasl_mechanism="SCRAM-SHA-512",
                     sasl_username="someone-" + "z" * 40, sasl_password="wrong")
    with pytest.raises(Exception, match="unknown user or wrong password"):
        Admin(broker.bootstrap, security=wrong).close()
    text = metrics_text(broker)
    assert 'tslog_denied_requests_total{principal="User:reader",api="delete_topics"}' in text
    assert ('tslog_failed_logins_total{mechanism="SCRAM-SHA-512",reason="bad_credentials"}'
            in text)
    assert "z" * 40 not in text  # a claimed name is never a label
