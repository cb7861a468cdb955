"""SASL/SCRAM in a cluster: the users live in etcd, so a user created through one broker logs
in at another; followers log in at their leaders with ``inter_broker_sasl_*``, so records
produced with acks=all (which waits for the follower) get through.
"""

from __future__ import annotations

import time

import pytest

from tests.helpers.broker_process import BrokerProcess
from tslog.client import Admin, Consumer, Producer
from tslog.client.errors import SaslAuthenticationFailedError, TslogError
from tslog.client.security import Security


def scram(user: str, password: str) -> Security:
    return Security(protocol="SASL_PLAINTEXT", sasl_username=user, sasl_password=password)


def until(check, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = check()
            if result:
                return result
        except (TslogError, ConnectionError):
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.1)


@pytest.mark.slow
def test_users_are_shared_and_followers_log_in(tmp_path, etcd):
    (tmp_path / "users").write_text("admin:admin-cluster-pw\nbroker:broker-cluster-pw\n")
    (tmp_path / "broker-password").write_text("broker-cluster-pw\n")
    brokers = [BrokerProcess(tmp_path / f"broker-{node}", config={
        "node_id": node, "etcd_endpoints": etcd.endpoint, "broker_session_timeout_ms": 2000,
        "sasl_mechanisms": "SCRAM-SHA-512", "sasl_bootstrap_users_file": tmp_path / "users",
        "inter_broker_sasl_username": "broker",
        "inter_broker_sasl_password_file": tmp_path / "broker-password"})
        for node in range(2)]
    try:
        for broker in brokers:
            broker.start()
        admin_login = scram("admin", "admin-cluster-pw")
        with Admin(brokers[0].bootstrap, security=admin_login) as admin:
            until(lambda: len(admin.brokers()) == 2)
            until(lambda: admin.create_topic("replicated", replication_factor=2,
                                             exist_ok=True) or True)
            admin.create_user("app", "app-cluster-pw")
        app = scram("app", "app-cluster-pw")
        with Admin(brokers[1].bootstrap, security=app) as at_other:  # followed from etcd
            assert "replicated" in until(at_other.list_topics)
        with Producer(brokers[1].bootstrap, security=app, acks="all") as producer:
            for i in range(10):
                producer.send("replicated", b"%d" % i)
            producer.flush()
        with Consumer(brokers[0].bootstrap, auto_offset_reset="earliest",
                      security=app) as consumer:
            consumer.subscribe(["replicated"])
            records = []
            deadline = time.monotonic() + 20
            while len(records) < 10 and time.monotonic() < deadline:
                records += consumer.poll(200)
        assert [r.value for r in records] == [b"%d" % i for i in range(10)]
        follower_logins = sum(b.log_text().count("authenticated as User:broker")
                              for b in brokers)
        assert follower_logins >= 1
        with Admin(brokers[0].bootstrap, security=admin_login) as admin:
            admin.delete_user("app")

        def refused_at_the_other_broker() -> bool:
            try:
                Admin(brokers[1].bootstrap, security=app).close()
            except SaslAuthenticationFailedError:
                return True
            return False

        until(refused_at_the_other_broker, timeout_s=10)
    finally:
        for broker in brokers:
            broker.cleanup()
