"""The Kafka port's group APIs pass the request gate's one group check (issue 41): a request
denied on its group gets Kafka's typed GROUP_AUTHORIZATION_FAILED and changes nothing, and a
request the same ACLs allow is answered, on the Kafka port as on tslog's.

Method: one broker with its Kafka listener, the authorizer on and allow-everyone-if-no-ACL
on, so only the group ``guarded`` is governed: the anonymous principal may Describe it, not
Read it (Kafka's mapping: Describe for FindCoordinator, OffsetFetch and DescribeGroups; Read
for JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit). Its committed offset is
set before the ACL exists; every Read request is then refused, and the offset, the group's
members and its listing are what they were. Raw Kafka requests (tslog's own Kafka codec
encodes what a client would send), so every API is asked at a version Kafka's clients use.
"""

from __future__ import annotations

import re
import socket
import struct
import urllib.request

import pytest
from kafka import KafkaAdminClient
from kafka import TopicPartition as KafkaPartition
from kafka.structs import OffsetAndMetadata

from tests.helpers.broker_process import free_port
from tests.integration.kafka.conftest import start_kafka_broker
from tslog.client import AclBinding, Admin, TopicPartition
from tslog.client.errors import GroupAuthorizationFailedError
from tslog.protocol.kafka import decode_response, encode_request

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

DENIED = 30  # GROUP_AUTHORIZATION_FAILED
GROUP = "guarded"
HIDDEN = "hidden"  # its Describe denied


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    started = start_kafka_broker(tmp_path_factory.mktemp("kafka-gate"),
                                 authorizer_enabled="true",
                                 allow_everyone_if_no_acl_found="true",
                                 metrics_listen=f"127.0.0.1:{free_port()}")
    topic = started.topic("gate")
    with KafkaAdminClient(bootstrap_servers=started.kafka) as admin:
        admin.alter_group_offsets(GROUP, {KafkaPartition(topic, 0): OffsetAndMetadata(4, "", -1)})
    with Admin(started.bootstrap) as admin:
        admin.create_acls([AclBinding("User:ANONYMOUS", "group", GROUP, "Describe"),
                           AclBinding("User:ANONYMOUS", "group", HIDDEN, "Describe", "deny")])
    yield started, topic
    started.process.cleanup()


def ask(broker, api_key: int, version: int, body: dict) -> dict:
    request = encode_request(api_key, version, 1, "gate-test", body)
    with socket.create_connection(("127.0.0.1", broker.kafka_port), timeout=10) as sock:
        sock.sendall(struct.pack(">I", len(request)) + request)
        size = struct.unpack(">I", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(api_key, version, sock.recv(size, socket.MSG_WAITALL))[1]


def join(member_id: str = "") -> dict:
    return {"group_id": GROUP, "session_timeout_ms": 10_000, "rebalance_timeout_ms": 10_000,
            "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}


def commit(topic: str, offset: int) -> dict:
    return {"group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": ""}]}]}


def fetched(broker, topic: str) -> int:
    answer = ask(broker, 9, 7, {"group_id": GROUP, "topics": [
        {"name": topic, "partition_indexes": [0]}], "require_stable": False})
    assert answer["error_code"] == 0
    return answer["topics"][0]["partitions"][0]["committed_offset"]


def test_every_read_on_the_group_is_refused_typed_and_changes_nothing(gated):
    broker, topic = gated
    assert ask(broker, 11, 5, join())["error_code"] == DENIED
    assert ask(broker, 11, 5, join("gate-test-1"))["error_code"] == DENIED
    assert ask(broker, 14, 3, {"group_id": GROUP, "generation_id": 1,
                               "member_id": "gate-test-1", "group_instance_id": None,
                               "assignments": []})["error_code"] == DENIED
    assert ask(broker, 12, 3, {"group_id": GROUP, "generation_id": 1,
                               "member_id": "gate-test-1",
                               "group_instance_id": None})["error_code"] == DENIED
    assert ask(broker, 13, 3, {"group_id": GROUP, "members": [
        {"member_id": "gate-test-1", "group_instance_id": None}]})["error_code"] == DENIED
    committed = ask(broker, 8, 7, commit(topic, 9))
    assert committed["topics"][0]["partitions"][0]["error_code"] == DENIED

    assert fetched(broker, topic) == 4  # the denied commit changed nothing
    described = ask(broker, 15, 5, {"groups": [GROUP], "include_authorized_operations": False})
    (group,) = described["groups"]
    assert (group["error_code"], group["group_state"], group["members"]) == (0, "Empty", [])
    with Admin(broker.bootstrap) as admin:  # tslog's port sees the same group, unchanged
        offsets = admin.list_consumer_group_offsets(GROUP)
        assert {tp: o.offset for tp, o in offsets.items()} == {TopicPartition(topic, 0): 4}
        (view,) = [g for g in admin.list_consumer_groups() if g.group_id == GROUP]
        assert (view.state, view.members) == ("EMPTY", 0)


def test_describe_is_allowed_by_the_same_acl_on_both_ports(gated):
    """Describe is granted: FindCoordinator and DescribeGroups answer on the Kafka port as
    ConsumerGroupDescribe does on tslog's; DeleteGroups (Delete) is refused on both."""
    broker, topic = gated
    found = ask(broker, 10, 4, {"key_type": 0, "coordinator_keys": [GROUP]})
    assert found["coordinators"][0]["error_code"] == 0
    with Admin(broker.bootstrap) as admin:
        assert admin.describe_consumer_groups([GROUP])[GROUP].state == "EMPTY"
        with pytest.raises(GroupAuthorizationFailedError):
            admin.delete_consumer_groups([GROUP])
    deleted = ask(broker, 42, 2, {"groups_names": [GROUP]})
    assert deleted["results"][0]["error_code"] == DENIED
    assert fetched(broker, topic) == 4


def denials(broker, api: str) -> float:
    """``tslog_denied_requests_total`` of the anonymous principal for ``api``, scraped."""
    port = broker.process.env["TSLOG_METRICS_LISTEN"].rsplit(":", 1)[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    found = re.search(r'^tslog_denied_requests_total\{principal="User:ANONYMOUS",'
                      rf'api="{api}"\}} (\S+)$', text, re.MULTILINE)
    return 0.0 if found is None else float(found.group(1))


def test_a_denied_find_and_describe_count_once_on_the_kafka_port(gated):
    """The Kafka port's FindCoordinator and DescribeGroups are judged by the same gate as
    tslog's requests (issue 41), so their denials are counted, once per request."""
    broker, _ = gated
    before = denials(broker, "find_coordinator"), denials(broker, "describe_groups")
    found = ask(broker, 10, 4, {"key_type": 0, "coordinator_keys": [HIDDEN, GROUP]})
    assert [c["error_code"] for c in found["coordinators"]] == [DENIED, 0]
    described = ask(broker, 15, 5, {"groups": [HIDDEN, GROUP],
                                    "include_authorized_operations": False})
    assert [g["error_code"] for g in described["groups"]] == [DENIED, 0]
    assert (denials(broker, "find_coordinator"), denials(broker, "describe_groups")) == (
        before[0] + 1, before[1] + 1)


def test_a_denied_delete_counts_once_on_either_port(gated):
    broker, topic = gated
    before = denials(broker, "delete_groups")
    deleted = ask(broker, 42, 2, {"groups_names": [GROUP]})
    assert deleted["results"][0]["error_code"] == DENIED
    assert denials(broker, "delete_groups") == before + 1
    with Admin(broker.bootstrap) as admin:
        with pytest.raises(GroupAuthorizationFailedError):
            admin.delete_consumer_groups([GROUP])
    assert denials(broker, "delete_groups") == before + 2
    assert fetched(broker, topic) == 4
