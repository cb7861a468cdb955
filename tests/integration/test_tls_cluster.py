"""Three brokers replicating over mutual TLS lose nothing acknowledged when the leader dies.

Every listener speaks TLS with client certificates required, so the followers' fetches only
work because each broker dials its leader with its own certificate and verifies the leader's
against ``tls_ca_file``. An acks=all producer writes, the leader is SIGKILLed, and a consumer
reads every acknowledged record back from the new leader.
"""

from __future__ import annotations

import time

import pytest

from tslog.client import Admin, Consumer, Producer

from tests.helpers.broker_process import start_cluster
from tests.helpers.tls import make_tls_files

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def tls_cluster(tmp_path, etcd):
    certs = make_tls_files(tmp_path / "certs")
    brokers = start_cluster(tmp_path, etcd.endpoint, 3, config=certs.broker_config("required"),
                            ssl_context=certs.client_context(certs.alice))
    yield brokers, certs
    for process in brokers:
        process.cleanup()


def leader_of(bootstrap, security, topic) -> int:
    with Admin(bootstrap, security=security, retries=10) as admin:
        return admin.describe_topic(topic).partitions[0].leader


def test_replication_over_mutual_tls_loses_nothing_on_a_leader_kill(tls_cluster):
    brokers, certs = tls_cluster
    security = certs.security(certs.alice)
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
    # The remaining follower fetches from the new leader as itself (its certificate).
    assert "authenticated as User:CN=broker" in brokers[new_leader].log_text()
