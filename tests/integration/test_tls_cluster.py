"""Three brokers replicating over TLS lose nothing acknowledged when the leader dies: with
mutual TLS, and with TLS plus SASL/SCRAM.

Every listener speaks TLS. With client certificates required, the followers' fetches only
work because each broker dials its leader with its own certificate and verifies the leader's
against ``tls_ca_file``; with SCRAM, because each logs in at its leader as the inter-broker
user (``inter_broker_sasl_*``), and clients log in as an application user. An acks=all
producer writes, the leader is SIGKILLed, and a consumer reads every acknowledged record
back from the new leader.
"""

from __future__ import annotations

import time

import pytest

from tslog.client import Admin, Consumer, Producer

from tests.helpers.broker_process import start_cluster
from tests.helpers.tls import Security, make_tls_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


APP_PASSWORD = "app-secret-7f3a"  # a test credential, written to the users file below


@pytest.fixture(params=["mutual-tls", "tls+scram"])
def tls_cluster(request, tmp_path, etcd):
    """(brokers, the client's Security, the principal followers log in as)."""
    certs = make_tls_files(tmp_path / "certs")
    if request.param == "mutual-tls":
        config = certs.broker_config("required")
        security, follower = certs.security(certs.alice), "User:CN=broker"
    else:
        users = tmp_path / "users"
        users.write_text(f"broker:broker-secret-1c9e\napp:{APP_PASSWORD}\n")
        password = tmp_path / "broker-password"
        password.write_text("broker-secret-1c9e\n")
        config = {**certs.broker_config("none"), "sasl_mechanisms": "SCRAM-SHA-512",
                  "sasl_bootstrap_users_file": str(users),
                  "inter_broker_sasl_username": "broker",
                  "inter_broker_sasl_password_file": str(password)}
        security = Security(protocol="SASL_SSL", ssl_cafile=certs.ca,
                            sasl_mechanism="SCRAM-SHA-512", sasl_username="app",
                            sasl_password=APP_PASSWORD)
        follower = "User:broker"
    brokers = start_cluster(tmp_path, etcd.endpoint, 3, config=config,
                            ssl_context=certs.client_context(certs.alice), security=security)
    yield brokers, security, follower
    for process in brokers:
        process.cleanup()


def leader_of(bootstrap, security, topic) -> int:
    with Admin(bootstrap, security=security, retries=10) as admin:
        return admin.describe_topic(topic).partitions[0].leader


def test_replication_over_tls_loses_nothing_on_a_leader_kill(tls_cluster):
    brokers, security, follower = tls_cluster
    everyone = ",".join(b.bootstrap for b in brokers)
    with Admin(everyone, security=security) as admin:
        admin.create_topic("tls-replicated", partitions=1, replication_factor=3,
                           config={"min.insync.replicas": "2"})
    with Producer(everyone, security=security, acks="all", linger_ms=1) as producer:
        sent = [(b"a%04d" % i, producer.send("tls-replicated", b"a%04d" % i))
                for i in range(300)]
        producer.flush()
        for _, future in sent:  # min ISR 2: a follower fetched each over TLS
            future.get(30)
        leader = leader_of(everyone, security, "tls-replicated")
        brokers[leader].kill()
        sent += [(b"b%04d" % i, producer.send("tls-replicated", b"b%04d" % i))
                 for i in range(300)]
        producer.flush(60_000)
        acknowledged = set()
        for value, future in sent:
            future.get(60)  # raises if not acknowledged
            acknowledged.add(value)
    survivors = ",".join(b.bootstrap for b in brokers if b.running)
    new_leader = leader_of(survivors, security, "tls-replicated")
    assert new_leader != leader
    with Consumer(survivors, security=security, auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["tls-replicated"])
        values, deadline = set(), time.monotonic() + 30
        while not acknowledged <= values and time.monotonic() < deadline:
            values.update(r.value for r in consumer.poll(200))
    assert acknowledged <= values, f"lost {len(acknowledged - values)} acknowledged records"
    assert len(acknowledged) == 600
    # The remaining follower fetches from the new leader as itself (its certificate, or the
    # inter-broker SCRAM user); no password reaches a log.
    log = brokers[new_leader].log_text()
    assert f"authenticated as {follower}" in log
    assert APP_PASSWORD not in log and "broker-secret-1c9e" not in log
