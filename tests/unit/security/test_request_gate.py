"""The request gate, API by API: what each needs, and what a denied principal is answered.

Every answer is checked against the API's response schema (what a client decodes), and a
handler that must not run is one that fails the test when called."""

from __future__ import annotations

import asyncio

import pytest

from tslog.broker.security.acl import AclBinding, Authorizer
from tslog.broker.admin.partition_requests import (
    EpochQuery,
    InitProducerIdRequest,
    OffsetForLeaderEpochRequest,
    OffsetsAtTimesRequest,
    TimesQuery,
)
from tslog.broker.security.group_gate import GatedGroups
from tslog.broker.security.request_gate import (
    DATA_KEYS,
    RULES,
    TYPED_GATES,
    GatedPartitionAdmin,
    GatedTopicAdmin,
    RequestGate,
    decide,
)
from tslog.protocol.messages import ApiKey

ALICE = "User:alice"
CLUSTER = ("cluster", "kafka-cluster")


def allow(operation, kind, name, pattern="literal", principal=ALICE):
    return AclBinding(principal, kind, pattern, name, operation, "allow")


class Recorded:
    """A stand-in for the partition admin service behind ``GatedPartitionAdmin``: it
    records what the gate let through (the request and the topics it denied)."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def method(request, denied=frozenset()):
            self.calls.append((name, request, denied))
            return "served"
        return method


class Conn:
    peer = "127.0.0.1:5555"

    def __init__(self, principal=ALICE):
        self.principal = principal


def gated(authz, principal=ALICE):
    service = Recorded()
    return GatedPartitionAdmin(authz, service, Conn(principal)), service


def epochs(replica_id):
    return OffsetForLeaderEpochRequest(replica_id, [EpochQuery("a1", 0, 0),
                                                    EpochQuery("b1", 0, 0)])


TIMES = OffsetsAtTimesRequest("append", [TimesQuery("a1", 0, [1, 2]), TimesQuery("b1", 0, [1])])


def run(authz, api, body, handler, principal=ALICE):
    result = decide(authz, int(api), principal, body, handler)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    return result


def never(body):
    raise AssertionError("the handler ran for a denied request")


def test_every_api_key_is_mapped():
    """Each api key has a rule, or is one of a typed service's, judged typed by its wrapper
    (tests/unit/broker/test_data_gate.py, test_group_gate.py, test_partition_admin_gate.py,
    test_topic_admin_gate.py), never both."""
    assert sorted(int(k) for k in ApiKey if int(k) not in set(RULES) | set(TYPED_GATES)) == []
    assert not set(TYPED_GATES) & set(RULES)
    assert DATA_KEYS == {0, 1, 2, 3}
    assert {key for key, wrapper in TYPED_GATES.items() if wrapper is GatedGroups} == {
        ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.LIST_GROUPS,
        ApiKey.DELETE_GROUPS, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
    # every group API is the group service's now: no rule judges a group
    assert not set(RULES) & {8, 9, 10, 16, 42, 68, 69}
    assert {21, 22, 23, 43, 45, 46, 1000} <= {
        key for key, wrapper in TYPED_GATES.items() if wrapper is GatedPartitionAdmin}
    assert {key for key, wrapper in TYPED_GATES.items() if wrapper is GatedTopicAdmin} == {
        19, 20, 32, 33, 37}
    # the SCRAM APIs, mapped by number before they exist here
    assert {17, 36, 50, 51} <= set(RULES)


@pytest.mark.parametrize("request_, method", [(epochs(-1), "offset_for_leader_epoch"),
                                              (TIMES, "offsets_at_times")])
def test_per_partition_apis_pass_the_denied_topics_to_the_service(request_, method):
    admin, service = gated(Authorizer(bindings=[allow("Describe", "topic", "a", "prefixed")]))
    assert getattr(admin, method)(request_) == "served"
    assert service.calls == [(method, request_, frozenset({"b1"}))]


def test_a_followers_request_needs_cluster_action():
    admin, service = gated(Authorizer(bindings=[allow("Read", "topic", "*")]))
    refused = admin.offset_for_leader_epoch(epochs(1))
    assert refused.error_code == 31 and not service.calls
    admin, service = gated(Authorizer(bindings=[allow("ClusterAction", *CLUSTER)]))
    assert admin.offset_for_leader_epoch(epochs(1)) == "served"
    assert service.calls == [("offset_for_leader_epoch", epochs(1), frozenset())]


@pytest.mark.parametrize("method,operation", [
    ("elect_leaders", "Alter"), ("alter_reassignments", "Alter"),
    ("list_reassignments", "Describe"), ("describe_log_dirs", "Describe")])
def test_cluster_level_partition_apis_need_their_operation_on_the_cluster(method, operation):
    admin, service = gated(Authorizer(bindings=[allow("All", "topic", "*")]))
    refused = getattr(admin, method)("request")
    assert (refused.error_code, refused.error_message) == (
        31, f"{ALICE} is not allowed to {operation} the cluster")
    assert not service.calls
    admin, service = gated(Authorizer(bindings=[allow(operation, *CLUSTER)]))
    assert getattr(admin, method)("request") == "served"




def test_init_producer_id_needs_write_on_some_topic_or_cluster_action():
    admin, service = gated(Authorizer(bindings=[allow("Read", "topic", "a1")]))
    assert admin.init_producer_id(InitProducerIdRequest()) == (31, -1, -1)
    assert not service.calls
    for binding in (allow("Write", "topic", "a", "prefixed"), allow("ClusterAction", *CLUSTER)):
        admin, _ = gated(Authorizer(bindings=[binding]))
        assert admin.init_producer_id(InitProducerIdRequest()) == "served"


@pytest.mark.parametrize("api,operation", [(29, "Describe"), (30, "Alter"), (31, "Alter"),
                                           (50, "Describe"), (51, "Alter")])
def test_acl_and_credential_management_needs_the_cluster(api, operation):
    denied = run(Authorizer(bindings=[allow("All", "topic", "*")]), api, {}, never)
    assert denied["error_code"] == 31
    authz = Authorizer(bindings=[allow(operation, *CLUSTER)])
    assert run(authz, api, {}, lambda b: "ran") == "ran"


@pytest.mark.parametrize("api", [17, 18, 36])
def test_handshake_apis_need_nothing(api):
    assert run(Authorizer(), api, {}, lambda b: "ran") == "ran"


def test_super_users_and_deny_wins():
    authz = Authorizer(["User:root"], bindings=[
        allow("Describe", "topic", "*", principal="User:*"),
        AclBinding(ALICE, "topic", "literal", "a1", "Describe", "deny")])
    admin, service = gated(authz)
    admin.offsets_at_times(TIMES)
    assert service.calls[-1][2] == frozenset({"a1"})
    root, service = gated(authz, "User:root")
    root.offsets_at_times(TIMES)
    assert service.calls[-1][2] == frozenset()


def test_bound_dispatch_reads_the_principal_at_each_request():
    class Conn:
        principal = ALICE
    conn = Conn()
    gate = RequestGate(Authorizer(bindings=[allow("Alter", *CLUSTER, principal="User:bob")]))
    dispatch = gate.bind({ApiKey.CREATE_ACLS: lambda b: "ran"}, conn)
    assert dispatch[ApiKey.CREATE_ACLS]({})["error_code"] == 31
    conn.principal = "User:bob"  # authenticated after the connection opened
    assert dispatch[ApiKey.CREATE_ACLS]({}) == "ran"
