"""The request gate, API by API: what each needs, and what a denied principal is answered.

Every answer is checked against the API's response schema (what a client decodes), and a
handler that must not run is one that fails the test when called."""

from __future__ import annotations

import asyncio

import pytest

from tslog.broker.security.acl import AclBinding, Authorizer
from tslog.broker.security.group_gate import GatedGroups
from tslog.broker.security.request_gate import (
    DATA_KEYS,
    RULES,
    TYPED_GATES,
    RequestGate,
    decide,
)
from tslog.protocol.messages import ApiKey, check_response_body

ALICE = "User:alice"
CLUSTER = ("cluster", "kafka-cluster")


def allow(operation, kind, name, pattern="literal", principal=ALICE):
    return AclBinding(principal, kind, pattern, name, operation, "allow")


def tp(topic, partition):
    return {"topic": topic, "partitions": [partition]}


# api key -> (request body, response the handler gives for that body)
SAMPLES = {
    ApiKey.OFFSETS_AT_TIMES: ({"timestamp_type": "append", "topics": [
        tp("a1", {"partition": 0, "timestamps": [1, 2]}),
        tp("b1", {"partition": 0, "timestamps": [1]})]},
        lambda body: {"topics": [tp(t["topic"], {"partition": 0, "error_code": 0,
                                                 "offsets": [0, 1], "timestamps": [1, 2]})
                                 for t in body["topics"]]}),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ({"replica_id": -1, "topics": [
        tp("a1", {"partition": 0, "leader_epoch": 0}), tp("b1", {"partition": 0, "leader_epoch": 0})]},
        lambda body: {"topics": [tp(t["topic"], {"partition": 0, "error_code": 0,
                                                 "leader_epoch": 0, "end_offset": 1})
                                 for t in body["topics"]]}),
}


def run(authz, api, body, handler, principal=ALICE):
    result = decide(authz, int(api), principal, body, handler)
    if asyncio.iscoroutine(result):
        result = asyncio.run(result)
    return result


def never(body):
    raise AssertionError("the handler ran for a denied request")


def test_every_api_key_is_mapped():
    """Each api key has a rule, or is one of a typed service's, judged typed by its wrapper
    (tests/unit/broker/test_data_gate.py, test_group_gate.py), never both."""
    assert sorted(int(k) for k in ApiKey if int(k) not in set(RULES) | set(TYPED_GATES)) == []
    assert not set(TYPED_GATES) & set(RULES)
    assert DATA_KEYS <= set(TYPED_GATES)
    assert {key for key, wrapper in TYPED_GATES.items() if wrapper is GatedGroups} == {
        ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.FIND_COORDINATOR, ApiKey.LIST_GROUPS,
        ApiKey.DELETE_GROUPS, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE}
    # every group API is the group service's now: no rule judges a group
    assert not set(RULES) & {8, 9, 10, 16, 42, 68, 69}
    # the SCRAM APIs, mapped by number before they exist here
    assert {17, 36, 50, 51} <= set(RULES)


@pytest.mark.parametrize("api", sorted(SAMPLES))
def test_per_partition_apis_serve_the_allowed_topics_and_deny_the_rest(api):
    body, handler = SAMPLES[api]
    operation = "Describe"
    authz = Authorizer(bindings=[allow(operation, "topic", "a", "prefixed")])
    seen = []
    response = run(authz, api, body, lambda b: seen.append(b) or handler(b))
    assert [t["topic"] for t in seen[0]["topics"]] == ["a1"]
    codes = {t["topic"]: t["partitions"][0]["error_code"] for t in response["topics"]}
    assert codes == {"a1": 0, "b1": 29}
    check_response_body(int(api), 0, response)
    # nothing allowed: the handler never runs
    response = run(Authorizer(), api, body, never)
    assert {t["partitions"][0]["error_code"] for t in response["topics"]} == {29}
    check_response_body(int(api), 0, response)


@pytest.mark.parametrize("api", [ApiKey.OFFSET_FOR_LEADER_EPOCH])
def test_a_followers_request_needs_cluster_action(api):
    body = {**SAMPLES[api][0], "replica_id": 1}
    response = run(Authorizer(bindings=[allow("Read", "topic", "*")]), api, body, never)
    assert response["error_code"] == 31
    authz = Authorizer(bindings=[allow("ClusterAction", *CLUSTER)])
    assert run(authz, api, body, lambda b: {"ok": b is body}) == {"ok": True}


def test_create_topics_needs_create_on_the_cluster_or_the_topic():
    body = {"topics": [{"topic": t, "partitions": 1, "replication_factor": 1, "configs": {}}
                       for t in ("a1", "b1")], "timeout_ms": 1}

    async def handler(b):
        return {"topics": [{"topic": t["topic"], "error_code": 0, "error_message": None}
                           for t in b["topics"]]}
    response = run(Authorizer(bindings=[allow("Create", "topic", "a1")]),
                   ApiKey.CREATE_TOPICS, body, handler)
    assert {t["topic"]: t["error_code"] for t in response["topics"]} == {"a1": 0, "b1": 29}
    check_response_body(19, 0, response)
    everything = run(Authorizer(bindings=[allow("Create", *CLUSTER)]), ApiKey.CREATE_TOPICS,
                     body, handler)
    assert {t["error_code"] for t in everything["topics"]} == {0}


@pytest.mark.parametrize("api,operation,body,response_key", [
    (ApiKey.DELETE_TOPICS, "Delete", {"topics": ["a1", "b1"], "timeout_ms": 1}, "topics"),
    (ApiKey.CREATE_PARTITIONS, "Alter", {"topics": [{"topic": "a1", "count": 2},
                                                    {"topic": "b1", "count": 2}],
                                         "timeout_ms": 1, "validate_only": False}, "topics"),
])
def test_topic_admin_apis_deny_per_topic(api, operation, body, response_key):
    def handler(b):
        entries = [{"topic": t if isinstance(t, str) else t["topic"], "error_code": 0}
                   for t in b["topics"]]
        if api == ApiKey.CREATE_PARTITIONS:
            entries = [{**e, "error_message": None} for e in entries]
        return {"topics": entries}
    response = run(Authorizer(bindings=[allow(operation, "topic", "a1")]), api, body, handler)
    assert {t["topic"]: t["error_code"] for t in response["topics"]} == {"a1": 0, "b1": 29}
    check_response_body(int(api), 0, response)


@pytest.mark.parametrize("api,operation", [(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigs"),
                                           (ApiKey.ALTER_CONFIGS, "AlterConfigs")])
def test_configs_need_their_operation_on_the_topic_or_the_cluster(api, operation):
    if api == ApiKey.DESCRIBE_CONFIGS:
        body = {"resources": [{"type": "topic", "name": "a1"}, {"type": "topic", "name": "b1"},
                              {"type": "broker", "name": "0"}]}
    else:
        body = {"resources": [{"type": "topic", "name": n, "configs": {}} for n in ("a1", "b1")],
                "validate_only": False}

    def handler(b):
        extra = {"configs": []} if api == ApiKey.DESCRIBE_CONFIGS else {}
        return {"resources": [{"type": r["type"], "name": r["name"], "error_code": 0,
                               "error_message": None, **extra} for r in b["resources"]]}
    # AlterConfigs implies DescribeConfigs
    response = run(Authorizer(bindings=[allow("AlterConfigs", "topic", "a1")]), api, body,
                   handler)
    codes = {r["name"]: r["error_code"] for r in response["resources"]}
    assert codes["a1"] == 0 and codes["b1"] == 29 and codes.get("0", 31) == 31
    check_response_body(int(api), 0, response)


def test_init_producer_id_needs_write_on_some_topic_or_cluster_action():
    denied = run(Authorizer(bindings=[allow("Read", "topic", "a1")]), ApiKey.INIT_PRODUCER_ID,
                 {}, never)
    assert denied["error_code"] == 31
    check_response_body(22, 0, denied)
    for binding in (allow("Write", "topic", "a", "prefixed"), allow("ClusterAction", *CLUSTER)):
        assert run(Authorizer(bindings=[binding]), ApiKey.INIT_PRODUCER_ID, {},
                   lambda b: "ran") == "ran"


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
    body, handler = SAMPLES[ApiKey.OFFSETS_AT_TIMES]
    authz = Authorizer(["User:root"], bindings=[
        allow("Describe", "topic", "*", principal="User:*"),
        AclBinding(ALICE, "topic", "literal", "a1", "Describe", "deny")])
    response = run(authz, ApiKey.OFFSETS_AT_TIMES, body, handler)
    assert {t["topic"]: t["partitions"][0]["error_code"] for t in response["topics"]} == {
        "a1": 29, "b1": 0}
    assert run(authz, ApiKey.OFFSETS_AT_TIMES, body, handler, "User:root") == handler(body)


def test_bound_dispatch_reads_the_principal_at_each_request():
    class Conn:
        principal = ALICE
    conn = Conn()
    gate = RequestGate(Authorizer(bindings=[allow("Alter", *CLUSTER, principal="User:bob")]))
    dispatch = gate.bind({ApiKey.CREATE_ACLS: lambda b: "ran"}, conn)
    assert dispatch[ApiKey.CREATE_ACLS]({})["error_code"] == 31
    conn.principal = "User:bob"  # authenticated after the connection opened
    assert dispatch[ApiKey.CREATE_ACLS]({}) == "ran"
