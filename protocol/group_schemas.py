"""Request and response schemas of the consumer-group APIs (KIP-848's consumer protocol).

Kafka's api keys and, in snake case, its field names, without what tslog does not have:
topic ids (topics are named), instance ids (no static membership), racks, and server-side
assignor choice per request (the coordinator's ``consumer.group.assignor`` decides).
``messages.py`` merges these into its tables.
"""

from __future__ import annotations

from .schema import (ERROR_CODE, INT32, INT64, PARTITION, STR, Choice, Int, ListOf, Nullable,
                     Struct)

OFFSET_COMMIT = 8
FIND_COORDINATOR = 10
LIST_GROUPS = 16
DELETE_GROUPS = 42
CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69


def _topic_partitions(partition) -> ListOf:
    return ListOf(Struct({"topic": STR, "partitions": ListOf(partition)}))


_COMMITTED = Struct({"partition": PARTITION, "offset": INT64, "metadata": STR})

GROUP_REQUEST_SCHEMAS: dict[tuple[int, int], Struct] = {
    # v0 (messages.py) plus the committing member, so the coordinator can fence zombies.
    (OFFSET_COMMIT, 1): Struct({
        "group_id": STR,
        "member_id": STR,  # "" with member_epoch -1: a commit outside group management
        "member_epoch": INT32,
        "topics": _topic_partitions(_COMMITTED),
    }),
    (FIND_COORDINATOR, 0): Struct({"key_type": Choice("group"), "keys": ListOf(STR)}),
    (LIST_GROUPS, 0): Struct({"states": Nullable(ListOf(STR))}),
    (DELETE_GROUPS, 0): Struct({"groups": ListOf(STR)}),
    # KIP-848's heartbeat: null fields mean "unchanged since the last heartbeat".
    (CONSUMER_GROUP_HEARTBEAT, 0): Struct({
        "group_id": STR,
        "member_id": STR,
        "member_epoch": INT32,
        "subscribed_topics": Nullable(ListOf(STR)),
        "owned": Nullable(_topic_partitions(PARTITION)),
    }),
    (CONSUMER_GROUP_DESCRIBE, 0): Struct({"groups": ListOf(STR)}),
}

GROUP_RESPONSE_SCHEMAS: dict[tuple[int, int], Struct] = {
    (OFFSET_COMMIT, 1): Struct({
        "topics": _topic_partitions(Struct({"partition": PARTITION, "error_code": ERROR_CODE})),
    }),
    (FIND_COORDINATOR, 0): Struct({
        "coordinators": ListOf(Struct({"key": STR, "node_id": INT32, "host": STR,
                                       "port": Int(0, 65535), "error_code": ERROR_CODE})),
    }),
    # error_code: NOT_COORDINATOR from a broker that is not the controller (absent: 0).
    (LIST_GROUPS, 0): Struct({
        "error_code": ERROR_CODE,
        "groups": ListOf(Struct({"group_id": STR, "state": STR, "members": INT32})),
    }, optional=frozenset({"error_code"})),
    (DELETE_GROUPS, 0): Struct({
        "results": ListOf(Struct({"group_id": STR, "error_code": ERROR_CODE})),
    }),
    (CONSUMER_GROUP_HEARTBEAT, 0): Struct({
        "error_code": ERROR_CODE,
        "member_id": STR,
        "member_epoch": INT32,
        "heartbeat_interval_ms": INT32,
        "assignment": Nullable(_topic_partitions(PARTITION)),
    }),
    (CONSUMER_GROUP_DESCRIBE, 0): Struct({
        "groups": ListOf(Struct({
            "group_id": STR, "error_code": ERROR_CODE, "state": STR, "group_epoch": INT32,
            "assignment_epoch": INT32, "assignor": STR,
            # client_id, client_host: the member's request header's client id and address
            # (absent from brokers before them).
            "members": ListOf(Struct({
                "member_id": STR, "member_epoch": INT32, "state": STR,
                "subscribed_topics": ListOf(STR), "assigned": _topic_partitions(PARTITION),
                "revoking": _topic_partitions(PARTITION), "target": _topic_partitions(PARTITION),
                "client_id": STR, "client_host": STR,
            }, optional=frozenset({"client_id", "client_host"}))),
        })),
    }),
}
