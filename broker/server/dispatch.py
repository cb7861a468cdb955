"""The dispatch table: every ApiKey's handler, bound once at start to its group's services.

Why bound at start: a handler is ``handler(services, body)``, and which services a group
gets is decided when the broker opens (``services.py``). Binding then leaves the connection
one dict lookup and one call per request, ``dispatch[api_key](body)``, and nothing that can
reach the rest of the broker.

Why ``MethodType`` and not ``functools.partial``: a bound method prepends its ``__self__``
to the call at no cost (CPython's vectorcall), measured here as fast as calling the plain
function with two arguments, where a partial was dearer.

A bound handler returns the response body, an awaitable of it, or None (Produce with
acks = 0), as ``handlers.py`` describes.
"""

from __future__ import annotations

from types import MethodType
from typing import Any, Callable

from tslog.protocol.messages import ApiKey

from ..admin.partitions import PartitionAdmin
from ..admin.topics import TopicAdmin
from ..data.service import DataService
from ..groups.api import GroupApi
from .acl_handlers import handle_create_acls, handle_delete_acls, handle_describe_acls
from .data_handlers import (
    handle_fetch,
    handle_list_offsets,
    handle_metadata,
    handle_produce,
)
from .group_handlers import (
    handle_consumer_group_describe,
    handle_consumer_group_heartbeat,
    handle_delete_groups,
    handle_find_coordinator,
    handle_list_groups,
)
from .handlers import (
    handle_alter_configs,
    handle_api_versions,
    handle_create_partitions,
    handle_create_topics,
    handle_delete_topics,
    handle_describe_configs,
    handle_offset_commit,
    handle_offset_fetch,
)
from .partition_handlers import (
    handle_alter_partition_reassignments,
    handle_delete_records,
    handle_elect_leaders,
    handle_init_producer_id,
    handle_list_partition_reassignments,
    handle_offset_for_leader_epoch,
    handle_offsets_at_times,
)
from .sasl_handlers import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from .services import AclApis, AdminApis, SecurityApis

Dispatch = dict[ApiKey, Callable[[dict], Any]]

# Bound to the data service (``broker/data``), which the Kafka port's adapters call too; the
# request gate binds them to its gated service per connection (``RequestGate.bind``).
DATA_SERVICE_HANDLERS = {
    ApiKey.PRODUCE: handle_produce,
    ApiKey.FETCH: handle_fetch,
    ApiKey.LIST_OFFSETS: handle_list_offsets,
    ApiKey.METADATA: handle_metadata,
}
# Bound to the partition admin service (``broker/admin``), which the Kafka port's adapters
# call too; gated per connection by ``GatedPartitionAdmin`` likewise.
PARTITION_ADMIN_HANDLERS = {
    ApiKey.DELETE_RECORDS: handle_delete_records,
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: handle_offset_for_leader_epoch,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: handle_list_partition_reassignments,
    ApiKey.ELECT_LEADERS: handle_elect_leaders,
    ApiKey.OFFSETS_AT_TIMES: handle_offsets_at_times,
}
# Bound to the topic admin service (``broker/admin``), which the Kafka port's adapters call
# too; the request gate binds them to its ``GatedTopicAdmin`` per connection.
TOPIC_ADMIN_HANDLERS = {
    ApiKey.CREATE_TOPICS: handle_create_topics,
    ApiKey.CREATE_PARTITIONS: handle_create_partitions,
    ApiKey.DELETE_TOPICS: handle_delete_topics,
    ApiKey.DESCRIBE_CONFIGS: handle_describe_configs,
    ApiKey.ALTER_CONFIGS: handle_alter_configs,
}
ADMIN_HANDLERS = {
    ApiKey.API_VERSIONS: handle_api_versions,
}
# Bound to the group service (``broker/groups/api.py``), which the Kafka port's adapters call
# too; the request gate binds them to its ``GatedGroups`` per connection.
GROUP_SERVICE_HANDLERS = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: handle_consumer_group_heartbeat,
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.CONSUMER_GROUP_DESCRIBE: handle_consumer_group_describe,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
}

ACL_HANDLERS = {
    ApiKey.DESCRIBE_ACLS: handle_describe_acls,
    ApiKey.CREATE_ACLS: handle_create_acls,
    ApiKey.DELETE_ACLS: handle_delete_acls,
}
# SaslHandshake and SaslAuthenticate are not here: the connection answers them itself.
SECURITY_HANDLERS = {
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: handle_alter_user_scram_credentials,
}


def bind_handlers(data: DataService, partition_admin: PartitionAdmin, admin: AdminApis,
                  groups: GroupApi, acls: AclApis, security: SecurityApis,
                  topic_admin: TopicAdmin) -> Dispatch:
    """Api key -> its handler bound to the services of its group."""
    dispatch: Dispatch = {}
    for handlers, services in ((DATA_SERVICE_HANDLERS, data),
                               (PARTITION_ADMIN_HANDLERS, partition_admin),
                               (TOPIC_ADMIN_HANDLERS, topic_admin),
                               (ADMIN_HANDLERS, admin), (GROUP_SERVICE_HANDLERS, groups),
                               (ACL_HANDLERS, acls), (SECURITY_HANDLERS, security)):
        for api_key, handler in handlers.items():
            dispatch[api_key] = MethodType(handler, services)
    return dispatch
