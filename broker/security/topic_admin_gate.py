"""``GatedTopicAdmin``: the topic admin service (``broker/admin``) as one connection's
principal may use it, for both front doors.

Kafka's mapping of each API to the operation it needs: CreateTopics, Create on the cluster,
else on each topic; DeleteTopics, Delete on each topic; CreatePartitions, Alter on each
topic; DescribeConfigs and AlterConfigs, that operation on a topic, or on the cluster for a
broker resource (the Kafka port's IncrementalAlterConfigs of a broker's replication rates
too). A denied entry is answered TOPIC_AUTHORIZATION_FAILED (CLUSTER_AUTHORIZATION_FAILED
for a broker) by the service, which does nothing else for it, and the allowed rest is
served. Each request with a denial is counted once in ``tslog_denied_requests_total``, under
the native API it is (IncrementalAlterConfigs under alter_configs: tslog numbers no
IncrementalAlterConfigs of its own).
"""

from __future__ import annotations

from typing import Iterable

from tslog.protocol.errors import ErrorCode

from ..admin.requests import (
    AlterConfigsRequest,
    BrokerConfigsChange,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    Refusal,
)
from ..metrics import security_metrics
from .acl import CLUSTER_NAME, Authorizer
from .connection_authorizer import ConnectionAuthorizer

TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
CLUSTER_DENIED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE_PARTITIONS = (
    19, 20, 32, 33, 37)


def refused(principal: str, operation: str, kind: str, name: str) -> Refusal:
    """A denied topic's (or broker's) code and message, as the native port always said."""
    code = TOPIC_DENIED if kind == "topic" else CLUSTER_DENIED
    return Refusal(code, f"{principal} is not allowed to {operation} {kind} {name!r}")


class GatedTopicAdmin:
    """The same methods as ``TopicAdmin``, each judging its typed request first."""

    __slots__ = ("admin", "authz", "connection")

    def __init__(self, authz: Authorizer, admin, connection) -> None:
        self.admin = admin
        self.authz = ConnectionAuthorizer(authz, connection)
        self.connection = connection

    def _may(self, operation: str, resource_type: str, name: str) -> bool:
        return self.authz.authorize(self.connection.principal, operation, resource_type, name)

    def _denied(self, operation: str, names: Iterable[str], api_key: int) -> dict:
        """The topics of ``names`` the principal may not ``operation``, each with its
        refusal; counted as one denial of the request."""
        principal = self.connection.principal
        denied = {name: refused(principal, operation, "topic", name) for name in names
                  if not self._may(operation, "topic", name)}
        if denied:
            security_metrics.denied(principal, api_key)
        return denied

    def _denied_resources(self, operation: str, resources: Iterable, api_key: int) -> dict:
        """Config resources by (type, name): a topic needs ``operation`` on it, a broker on
        the cluster."""
        principal = self.connection.principal
        denied = {}
        for kind, name, *_ in resources:
            topic = kind == "topic"
            if not self._may(operation, "topic" if topic else "cluster",
                             name if topic else CLUSTER_NAME):
                denied[kind, name] = refused(principal, operation,
                                             "topic" if topic else "broker", name)
        if denied:
            security_metrics.denied(principal, api_key)
        return denied

    def create_topics(self, request: CreateTopicsRequest):
        if self._may("Create", "cluster", CLUSTER_NAME):
            return self.admin.create_topics(request)
        return self.admin.create_topics(request, self._denied(
            "Create", _names(request.topics), CREATE_TOPICS))

    def delete_topics(self, request: DeleteTopicsRequest):
        return self.admin.delete_topics(request, self._denied(
            "Delete", request.topics, DELETE_TOPICS))

    def create_partitions(self, request: CreatePartitionsRequest):
        return self.admin.create_partitions(request, self._denied(
            "Alter", _names(request.topics), CREATE_PARTITIONS))

    def describe_configs(self, request: DescribeConfigsRequest):
        return self.admin.describe_configs(request, self._denied_resources(
            "DescribeConfigs", request.resources, DESCRIBE_CONFIGS))

    def alter_configs(self, request: AlterConfigsRequest):
        return self.admin.alter_configs(request, self._denied_resources(
            "AlterConfigs", request.resources, ALTER_CONFIGS))

    def alter_broker_configs(self, request: BrokerConfigsChange):
        """AlterConfigs on the cluster, or the change is refused whole."""
        if self._may("AlterConfigs", "cluster", CLUSTER_NAME):
            return self.admin.alter_broker_configs(request)
        principal = self.connection.principal
        security_metrics.denied(principal, ALTER_CONFIGS)
        return self.admin.alter_broker_configs(request, Refusal(
            CLUSTER_DENIED, f"{principal} is not allowed to AlterConfigs the cluster"))


def _names(entries: Iterable) -> list[str]:
    return [entry.topic for entry in entries]
