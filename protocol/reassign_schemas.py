"""Request and response schemas of AlterPartitionReassignments (Kafka's api key 45),
ListPartitionReassignments (46) and ElectLeaders (43, preferred leaders only).

Kafka's fields in snake case, grouped as every tslog per-partition API is (``topic``, then
``partitions``). Alter: ``replicas`` is the partition's new replica set, preferred leader
first, or null to cancel the reassignment under way. List: Kafka's ``replicas``,
``adding_replicas`` and ``removing_replicas``, and, for progress, the partition's leader,
ISR, the leader's log end offset and each added replica's log end offset as the leader last
saw it (``-1``: not known to the broker that answered, which is not the leader, or no fetch
yet). ElectLeaders: the partitions whose preferred replica should lead (null: every one that
it does not lead), answered per partition. ``messages.py`` merges these into its tables.
"""

from __future__ import annotations

from .schema import (
    ERROR_CODE,
    INT32,
    INT64,
    NON_NEGATIVE_INT32,
    NULLABLE_STR,
    PARTITION,
    STR,
    ListOf,
    Nullable,
    Schema,
    Struct,
)

ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
ELECT_LEADERS = 43

_BROKER = NON_NEGATIVE_INT32


def _tp_groups(partition: Schema) -> ListOf:
    return ListOf(Struct({"topic": STR, "partitions": ListOf(partition)}))


REASSIGN_REQUEST_SCHEMAS: dict[tuple[int, int], Struct] = {
    (ALTER_PARTITION_REASSIGNMENTS, 0): Struct({
        "timeout_ms": NON_NEGATIVE_INT32,
        "topics": _tp_groups(Struct({"partition": PARTITION,
                                     "replicas": Nullable(ListOf(_BROKER))})),
    }),
    (LIST_PARTITION_REASSIGNMENTS, 0): Struct({
        "timeout_ms": NON_NEGATIVE_INT32,
        "topics": Nullable(_tp_groups(PARTITION)),
    }),
}

REASSIGN_REQUEST_SCHEMAS[ELECT_LEADERS, 0] = Struct({
    "timeout_ms": NON_NEGATIVE_INT32,
    "topics": Nullable(_tp_groups(PARTITION)),
})

_PARTITION_RESULT = Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                            "error_message": NULLABLE_STR})

REASSIGN_RESPONSE_SCHEMAS: dict[tuple[int, int], Struct] = {
    (ELECT_LEADERS, 0): Struct({"topics": _tp_groups(_PARTITION_RESULT)}),
    (ALTER_PARTITION_REASSIGNMENTS, 0): Struct({"topics": _tp_groups(_PARTITION_RESULT)}),
    (LIST_PARTITION_REASSIGNMENTS, 0): Struct({
        "topics": _tp_groups(Struct({
            "partition": PARTITION, "replicas": ListOf(INT32),
            "adding_replicas": ListOf(INT32), "removing_replicas": ListOf(INT32),
            "leader": INT32, "isr": ListOf(INT32), "log_end_offset": INT64,
            "replica_log_end_offsets": ListOf(Struct({"broker": INT32,
                                                      "log_end_offset": INT64})),
        })),
    }),
}
