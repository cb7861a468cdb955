"""What each API's request and response bodies hold, version by version: the api keys, the
versions this side speaks, and the declarative schemas ``messages.py`` checks bodies against.

A table of its own (not part of the envelope codec in ``messages.py``) because it is what
grows with every new API; the consumer-group, CreatePartitions, reassignment, ACL and
authentication schemas come from ``group_schemas.py``, ``partition_schemas.py``,
``reassign_schemas.py``, ``acl_schemas.py`` and ``sasl_schemas.py``.
"""

from __future__ import annotations

from enum import IntEnum

from .acl_schemas import ACL_REQUEST_SCHEMAS, ACL_RESPONSE_SCHEMAS
from .group_schemas import GROUP_REQUEST_SCHEMAS, GROUP_RESPONSE_SCHEMAS
from .partition_schemas import PARTITION_REQUEST_SCHEMAS, PARTITION_RESPONSE_SCHEMAS
from .reassign_schemas import REASSIGN_REQUEST_SCHEMAS, REASSIGN_RESPONSE_SCHEMAS
from .sasl_schemas import SASL_REQUEST_SCHEMAS, SASL_RESPONSE_SCHEMAS
from .schema import (
    BIN,
    BOOL,
    ERROR_CODE,
    INT32,
    INT64,
    NON_NEGATIVE_INT32,
    NULLABLE_STR,
    PARTITION,
    STR,
    Choice,
    Int,
    ListOf,
    MapOf,
    Nullable,
    Schema,
    Struct,
)


class ApiKey(IntEnum):
    """API numbers, Kafka's wherever Kafka has the same API.

    On a per-request path, read a member into a module global once (``_FETCH =
    ApiKey.FETCH``): in Python 3.11 reading any enum member off its class is several times
    dearer than reading a global (``EnumType`` defines ``__getattr__``, which takes class
    attribute reads off the fast path); the same holds for ``ErrorCode``.
    """

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    # tslog's own (no Kafka API does this): numbered far past Kafka's keys
    OFFSETS_AT_TIMES = 1000


API_KEYS: dict[int, ApiKey] = {int(key): key for key in ApiKey}

# api key -> (min_version, max_version) this side speaks.
SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {key: (0, 0) for key in ApiKey}
# OffsetCommit v1 names the committing group member (``member_id``, ``member_epoch``), so
# the coordinator can refuse commits from members it removed or moved past (fencing).
SUPPORTED_VERSIONS[ApiKey.OFFSET_COMMIT] = (0, 1)
# OffsetsAtTimes v1 (a chart's edges): the times once for all partitions, each partition's
# offsets as packed int64 instead of two lists of ints to encode and check one by one.
SUPPORTED_VERSIONS[ApiKey.OFFSETS_AT_TIMES] = (0, 1)

def _tp_groups(partition: Schema) -> ListOf:
    """``[{"topic": str, "partitions": [partition]}]``, the shape every per-partition API uses."""
    return ListOf(Struct({"topic": STR, "partitions": ListOf(partition)}))


_CONFIG_SOURCE = Choice("default", "broker", "topic")

REQUEST_SCHEMAS: dict[tuple[int, int], Struct] = {
    (ApiKey.API_VERSIONS, 0): Struct({}),
    (ApiKey.METADATA, 0): Struct({"topics": Nullable(ListOf(STR))}),
    (ApiKey.CREATE_TOPICS, 0): Struct({
        "topics": ListOf(Struct({"topic": STR, "partitions": INT32,
                                 "replication_factor": INT32, "configs": MapOf(STR)})),
        "timeout_ms": NON_NEGATIVE_INT32,
    }),
    (ApiKey.DELETE_TOPICS, 0): Struct({"topics": ListOf(STR), "timeout_ms": NON_NEGATIVE_INT32}),
    # offset: records before it go; -1 = the high watermark (Kafka's DeleteRecords)
    (ApiKey.DELETE_RECORDS, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "offset": INT64})),
        "timeout_ms": NON_NEGATIVE_INT32,
    }),
    (ApiKey.DESCRIBE_CONFIGS, 0): Struct({
        "resources": ListOf(Struct({"type": Choice("topic", "broker"), "name": STR})),
    }),
    (ApiKey.ALTER_CONFIGS, 0): Struct({
        "resources": ListOf(Struct({"type": Choice("topic"), "name": STR,
                                    "configs": MapOf(NULLABLE_STR)})),
        "validate_only": BOOL,
    }),
    (ApiKey.PRODUCE, 0): Struct({
        "acks": Choice(-1, 0, 1),
        "timeout_ms": NON_NEGATIVE_INT32,
        "topics": _tp_groups(Struct({"partition": PARTITION, "records": BIN})),
    }),
    (ApiKey.FETCH, 0): Struct({
        "replica_id": INT32,
        "max_wait_ms": NON_NEGATIVE_INT32,
        "min_bytes": NON_NEGATIVE_INT32,
        "max_bytes": NON_NEGATIVE_INT32,
        "topics": _tp_groups(Struct({"partition": PARTITION, "fetch_offset": INT64,
                                     "max_bytes": NON_NEGATIVE_INT32})),
    }),
    (ApiKey.LIST_OFFSETS, 0): Struct({
        "replica_id": INT32,
        "timestamp_type": Choice("append", "create"),
        "topics": _tp_groups(Struct({"partition": PARTITION, "timestamp": INT64})),
    }),
    # many times per partition, each answered as ListOffsets answers one (time_series.py)
    (ApiKey.OFFSETS_AT_TIMES, 0): Struct({
        "timestamp_type": Choice("append", "create"),
        "topics": _tp_groups(Struct({"partition": PARTITION, "timestamps": ListOf(INT64)})),
    }),
    # v1: the same times for every partition, said once; offsets only, packed (docs/protocol.md)
    (ApiKey.OFFSETS_AT_TIMES, 1): Struct({
        "timestamp_type": Choice("append", "create"),
        "timestamps": ListOf(INT64),
        "topics": _tp_groups(PARTITION),
    }),
    (ApiKey.OFFSET_COMMIT, 0): Struct({
        "group_id": STR,
        "topics": _tp_groups(Struct({"partition": PARTITION, "offset": INT64, "metadata": STR})),
    }),
    (ApiKey.OFFSET_FETCH, 0): Struct({
        "group_id": STR,
        "topics": Nullable(_tp_groups(PARTITION)),
    }),
    (ApiKey.INIT_PRODUCER_ID, 0): Struct({}),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 0): Struct({
        "replica_id": INT32,
        "topics": _tp_groups(Struct({"partition": PARTITION, "leader_epoch": INT32})),
    }),
}

RESPONSE_SCHEMAS: dict[tuple[int, int], Struct] = {
    (ApiKey.API_VERSIONS, 0): Struct({
        "error_code": ERROR_CODE,
        "api_keys": ListOf(Struct({"api_key": INT32, "min_version": INT32,
                                   "max_version": INT32})),
    }),
    (ApiKey.METADATA, 0): Struct({
        "brokers": ListOf(Struct({"node_id": INT32, "host": STR, "port": Int(0, 65535)})),
        "controller_id": INT32,
        "topics": ListOf(Struct({
            "topic": STR, "error_code": ERROR_CODE,
            "partitions": ListOf(Struct({
                "partition": PARTITION, "error_code": ERROR_CODE, "leader": INT32,
                "leader_epoch": INT32, "replicas": ListOf(INT32), "isr": ListOf(INT32),
            })),
        })),
    }),
    (ApiKey.CREATE_TOPICS, 0): Struct({
        "topics": ListOf(Struct({"topic": STR, "error_code": ERROR_CODE,
                                 "error_message": NULLABLE_STR})),
    }),
    (ApiKey.DELETE_TOPICS, 0): Struct({
        "topics": ListOf(Struct({"topic": STR, "error_code": ERROR_CODE})),
    }),
    (ApiKey.DELETE_RECORDS, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "low_watermark": INT64,
                                     "error_code": ERROR_CODE})),
    }),
    (ApiKey.DESCRIBE_CONFIGS, 0): Struct({
        "resources": ListOf(Struct({
            "type": STR, "name": STR, "error_code": ERROR_CODE, "error_message": NULLABLE_STR,
            "configs": ListOf(Struct({"name": STR, "value": STR, "source": _CONFIG_SOURCE})),
        })),
    }),
    (ApiKey.ALTER_CONFIGS, 0): Struct({
        "resources": ListOf(Struct({"type": STR, "name": STR, "error_code": ERROR_CODE,
                                    "error_message": NULLABLE_STR})),
    }),
    # error_message: why, where the code alone does not say (a batch over the topic's
    # max.message.bytes names its size and the limit); absent otherwise and from older brokers.
    (ApiKey.PRODUCE, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                                     "base_offset": INT64, "log_append_time": INT64,
                                     "log_start_offset": INT64, "error_message": NULLABLE_STR},
                                    optional=frozenset({"error_message"}))),
    }),
    (ApiKey.FETCH, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                                     "high_watermark": INT64, "log_start_offset": INT64,
                                     "records": BIN})),
    }),
    (ApiKey.LIST_OFFSETS, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                                     "offset": INT64, "timestamp": INT64})),
    }),
    (ApiKey.OFFSETS_AT_TIMES, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                                     "offsets": ListOf(INT64), "timestamps": ListOf(INT64)})),
    }),
    (ApiKey.OFFSETS_AT_TIMES, 1): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                                     "offsets": BIN})),  # int64 little-endian, one a time
    }),
    (ApiKey.OFFSET_COMMIT, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE})),
    }),
    (ApiKey.OFFSET_FETCH, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "offset": INT64,
                                     "metadata": STR, "error_code": ERROR_CODE})),
    }),
    (ApiKey.INIT_PRODUCER_ID, 0): Struct({
        "error_code": ERROR_CODE, "producer_id": INT64, "producer_epoch": INT32,
    }),
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, 0): Struct({
        "topics": _tp_groups(Struct({"partition": PARTITION, "error_code": ERROR_CODE,
                                     "leader_epoch": INT32, "end_offset": INT64})),
    }),
}

REQUEST_SCHEMAS.update(GROUP_REQUEST_SCHEMAS)
RESPONSE_SCHEMAS.update(GROUP_RESPONSE_SCHEMAS)
REQUEST_SCHEMAS.update(PARTITION_REQUEST_SCHEMAS)
RESPONSE_SCHEMAS.update(PARTITION_RESPONSE_SCHEMAS)
REQUEST_SCHEMAS.update(REASSIGN_REQUEST_SCHEMAS)
RESPONSE_SCHEMAS.update(REASSIGN_RESPONSE_SCHEMAS)
REQUEST_SCHEMAS.update(ACL_REQUEST_SCHEMAS)
RESPONSE_SCHEMAS.update(ACL_RESPONSE_SCHEMAS)
REQUEST_SCHEMAS.update(SASL_REQUEST_SCHEMAS)
RESPONSE_SCHEMAS.update(SASL_RESPONSE_SCHEMAS)
