"""Request and response schemas of CreatePartitions (Kafka's api key 37).

Kafka's fields in snake case, named as tslog's CreateTopics names them (``topic``, not
``name``), without the explicit replica ``assignments`` (the controller assigns replicas as
it does for a new topic). ``count`` is the topic's new total, not the number to add.
``messages.py`` merges these into its tables.
"""

from __future__ import annotations

from .schema import BOOL, ERROR_CODE, INT32, NON_NEGATIVE_INT32, NULLABLE_STR, STR, ListOf, Struct

CREATE_PARTITIONS = 37

PARTITION_REQUEST_SCHEMAS: dict[tuple[int, int], Struct] = {
    (CREATE_PARTITIONS, 0): Struct({
        "topics": ListOf(Struct({"topic": STR, "count": INT32})),
        "timeout_ms": NON_NEGATIVE_INT32,
        "validate_only": BOOL,
    }),
}

PARTITION_RESPONSE_SCHEMAS: dict[tuple[int, int], Struct] = {
    (CREATE_PARTITIONS, 0): Struct({
        "topics": ListOf(Struct({"topic": STR, "error_code": ERROR_CODE,
                                 "error_message": NULLABLE_STR})),
    }),
}
