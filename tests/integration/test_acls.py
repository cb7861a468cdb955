"""ACL authorization against real broker processes (principal User:ANONYMOUS: no SASL here).

The story of issue 16: an operator (a super user) creates topics and grants Read on the
prefix ``a``; restarted without super users, the same client can consume ``a1`` but not
produce to it, does not see ``b1``, cannot delete ``a1`` (nothing changes), and cannot
manage ACLs. The ACLs survive the restart (the data directory's file). ACLs round-trip
through ``Admin`` and ``tslog acls``; in a cluster, one added on a broker is enforced by
another within a couple of seconds.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tslog.client import AclBinding, AclBindingFilter, Admin, Consumer, Producer, TopicPartition
from tslog.client.errors import ClusterAuthorizationFailedError, TopicAuthorizationFailedError

pytestmark = pytest.mark.timeout(120)

ANON = "User:ANONYMOUS"
SUPER = {"TSLOG_AUTHORIZER_ENABLED": "true", "TSLOG_SUPER_USERS": ANON}
LOCKED = {"TSLOG_AUTHORIZER_ENABLED": "true"}


def tslog(broker, *args):
    command = [sys.executable, "-m", "tslog.client.cli", *args, "--bootstrap", broker.bootstrap]
    return subprocess.run(command, capture_output=True, timeout=60)


def ok(result) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def read_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    with Consumer(bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            values += [record.value for record in consumer.poll(timeout_ms=500)]
        return values


@pytest.mark.slow
def test_read_only_on_a_prefix(broker_factory):
    broker = broker_factory(env=SUPER)
    with Admin(broker.bootstrap) as admin:
        for name in ("a1", "b1"):
            admin.create_topic(name)
        admin.create_acls([AclBinding(ANON, "topic", "a", "Read", pattern_type="prefixed")])
        assert admin.describe_acls() == [
            AclBinding(ANON, "topic", "a", "Read", "allow", "prefixed")]
    with Producer(broker.bootstrap, acks=1) as producer:
        for topic in ("a1", "b1"):
            producer.send(topic, value=f"{topic}-v".encode()).get(timeout=20)

    broker.restart(env=LOCKED)  # no super users now: only the ACL above
    assert read_all(broker.bootstrap, "a1", 1) == [b"a1-v"]
    with Producer(broker.bootstrap, acks=1) as producer:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("a1", value=b"nope").get(timeout=20)
    with Admin(broker.bootstrap) as admin:
        assert admin.list_topics() == ["a1"]  # b1 is hidden
        # OffsetsAtTimes v1 (a console chart): Describe, which Read implies, and no more
        assert admin.offset_columns([TopicPartition("a1", 0)], [0]) == {
            TopicPartition("a1", 0): [0]}
        with pytest.raises(TopicAuthorizationFailedError):
            admin.offset_columns([TopicPartition("b1", 0)], [0])
        with pytest.raises(TopicAuthorizationFailedError):
            admin.delete_topic("a1")
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.create_acls([AclBinding(ANON, "topic", "b", "Write")])
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_acls()
    refused = tslog(broker, "acls", "list")
    assert refused.returncode == 1, refused.stderr
    assert b"User:ANONYMOUS is not allowed to Describe the cluster" in refused.stderr
    assert read_all(broker.bootstrap, "a1", 1) == [b"a1-v"]  # the denied delete changed nothing

    broker.restart(env=SUPER)  # the topic and its data are still there for the super user
    assert read_all(broker.bootstrap, "b1", 1) == [b"b1-v"]
    with Admin(broker.bootstrap) as admin:
        assert admin.list_topics() == ["a1", "b1"]


@pytest.mark.slow
def test_acls_round_trip_through_the_command_line(broker_factory):
    broker = broker_factory(env=SUPER)
    out = ok(tslog(broker, "acls", "add", "--allow-principal", "User:alice", "--operation",
                   "Read", "--operation", "Describe", "--topic", "a", "--prefixed"))
    assert "added: User:alice allow Read topic a (prefixed)" in out
    ok(tslog(broker, "acls", "add", "--deny-principal", "User:*", "--operation", "Write",
             "--topic", "a1"))
    listed = ok(tslog(broker, "acls", "list", "--topic", "a1")).splitlines()
    assert sorted(listed) == ["User:* deny Write topic a1 (literal)",
                              "User:alice allow Describe topic a (prefixed)",
                              "User:alice allow Read topic a (prefixed)"]
    assert ok(tslog(broker, "acls", "list", "--topic", "b1")) == ""
    assert len(ok(tslog(broker, "acls", "list", "--principal", "User:alice")).splitlines()) == 2
    removed = ok(tslog(broker, "acls", "remove", "--allow-principal", "User:alice",
                       "--topic", "a", "--prefixed"))
    assert removed.count("removed:") == 2
    with Admin(broker.bootstrap) as admin:
        assert admin.describe_acls(AclBindingFilter(resource_type="topic")) == [
            AclBinding("User:*", "topic", "a1", "Write", "deny", "literal")]
        assert admin.delete_acls(AclBindingFilter(permission="deny")) == [
            AclBinding("User:*", "topic", "a1", "Write", "deny", "literal")]
        assert admin.describe_acls() == []


def test_an_acl_added_on_one_broker_is_enforced_by_another(cluster_factory):
    first, second = cluster_factory(2, config={"authorizer_enabled": "true",
                                               "allow_everyone_if_no_acl_found": "true"})
    with Admin(first.bootstrap) as admin:
        admin.create_topic("c1")
    with Admin(second.bootstrap) as admin:
        assert "c1" in admin.list_topics()
    with Admin(first.bootstrap) as admin:
        admin.create_acls([AclBinding(ANON, "topic", "c1", "Describe", "deny")])
    added = time.monotonic()
    with Admin(second.bootstrap) as admin:
        while "c1" in admin.list_topics():
            assert time.monotonic() - added < 2.0, "not enforced by the other broker in 2 s"
            time.sleep(0.05)
