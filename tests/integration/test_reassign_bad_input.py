"""Reassignment and preferred-election requests a broker must refuse, on one real broker:
typed error codes per partition for what cannot be, INVALID_REQUEST for a body that breaks
the schema (the connection and the broker go on serving), CLUSTER_AUTHORIZATION_FAILED for a
principal without Alter/Describe on the cluster, and nothing changed by any of them."""

from __future__ import annotations

import pytest

from tests.helpers.wire import Wire
from tslog.client import Admin, Producer, TopicPartition
from tslog.client.errors import (
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    InvalidReplicaAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

pytestmark = pytest.mark.timeout(120)

ANON = "User:ANONYMOUS"


def alter(wire, partition: int, replicas) -> dict:
    body = wire.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
        "timeout_ms": 5000, "topics": [{"topic": "events", "partitions": [
            {"partition": partition, "replicas": replicas}]}]})
    ((result,),) = [t["partitions"] for t in body["topics"]]
    return result


def test_a_single_broker_refuses_every_move_but_to_itself(broker):
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events")
    with Producer(broker.bootstrap) as producer:
        producer.send("events", b"kept").get(10)
    with Wire(broker.host, broker.port) as wire:
        assert alter(wire, 0, [0])["error_code"] == 0  # where it is already: nothing to do
        refused = alter(wire, 0, [0, 1])
        assert refused["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "single broker" in refused["error_message"]
        assert alter(wire, 0, None)["error_code"] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        assert alter(wire, 7, [0])["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        malformed = wire.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, {
            "timeout_ms": 5000, "topics": [{"topic": "events", "partitions": [
                {"partition": 0, "replicas": [-1]}]}]}, validate=False)
        assert malformed["error_code"] == ErrorCode.INVALID_REQUEST
        listed = wire.request(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                              {"timeout_ms": 5000, "topics": None})
        assert listed == {"topics": []}
    with Admin(broker.bootstrap) as admin:
        with pytest.raises(InvalidReplicaAssignmentError):
            admin.alter_partition_reassignments({TopicPartition("events", 0): [3]})
        with pytest.raises(NoReassignmentInProgressError):
            admin.alter_partition_reassignments({TopicPartition("events", 0): None})
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.alter_partition_reassignments({TopicPartition("nope", 0): [0]})
        assert admin.list_partition_reassignments() == {}
        (error,) = admin.elect_leaders([TopicPartition("events", 0)]).values()
        assert isinstance(error, ElectionNotNeededError)
        assert admin.elect_leaders() == {}
        (partition,) = admin.describe_topic("events").partitions
        assert (partition.leader, partition.replicas) == (0, [0])
    with Producer(broker.bootstrap) as producer:  # still serving
        assert producer.send("events", b"after").get(10).offset == 1


@pytest.mark.slow
def test_without_alter_on_the_cluster_every_request_is_denied(broker_factory):
    broker = broker_factory(env={"TSLOG_AUTHORIZER_ENABLED": "true", "TSLOG_SUPER_USERS": ANON})
    with Admin(broker.bootstrap) as admin:
        admin.create_topic("events")
    broker.restart(env={"TSLOG_AUTHORIZER_ENABLED": "true"})  # no ACL grants anything now
    with Admin(broker.bootstrap) as admin:
        with pytest.raises(ClusterAuthorizationFailedError, match="Alter the cluster"):
            admin.alter_partition_reassignments({TopicPartition("events", 0): [0]})
        with pytest.raises(ClusterAuthorizationFailedError, match="Describe the cluster"):
            admin.list_partition_reassignments()
        with pytest.raises(ClusterAuthorizationFailedError, match="Alter the cluster"):
            admin.elect_leaders()
    with Wire(broker.host, broker.port) as wire:
        denied = wire.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                              {"timeout_ms": 5000, "topics": []})
        assert denied["error_code"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
