"""Request and response schemas of the ACL APIs: DescribeAcls (29), CreateAcls (30),
DeleteAcls (31), Kafka's api keys.

Kafka's fields in snake case (a binding's ``host`` is optional: absent means ``*``, any host;
in a filter, absent or null matches every host) and with Kafka's enum values spelled as
words: resource types ``topic``, ``group``, ``cluster``; pattern types ``literal``,
``prefixed``; operations as Kafka names them (``Read``, ``DescribeConfigs``, ...); permissions
``allow``, ``deny``. In a filter
(DescribeAcls, DeleteAcls) ``"any"`` matches every value of a field and a null name or
principal every name; pattern type ``"match"`` selects every binding that applies to the
named resource (literal, ``*`` and prefixes), as Kafka's MATCH. ``messages.py`` merges these
into its tables.
"""

from __future__ import annotations

from .schema import ERROR_CODE, NULLABLE_STR, STR, Choice, ListOf, Struct

DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31

RESOURCE_TYPES = ("topic", "group", "cluster")
PATTERN_TYPES = ("literal", "prefixed")
OPERATIONS = ("Read", "Write", "Create", "Delete", "Describe", "Alter", "DescribeConfigs",
              "AlterConfigs", "ClusterAction", "All")
PERMISSIONS = ("allow", "deny")

_BINDING = Struct({
    "resource_type": Choice(*RESOURCE_TYPES),
    "resource_name": STR,
    "pattern_type": Choice(*PATTERN_TYPES),
    "principal": STR,
    "operation": Choice(*OPERATIONS),
    "permission_type": Choice(*PERMISSIONS),
    "host": STR,
}, optional=frozenset({"host"}))

_FILTER = Struct({
    "resource_type": Choice("any", *RESOURCE_TYPES),
    "resource_name": NULLABLE_STR,
    "pattern_type": Choice("any", "match", *PATTERN_TYPES),
    "principal": NULLABLE_STR,
    "operation": Choice("any", *OPERATIONS),
    "permission_type": Choice("any", *PERMISSIONS),
    "host": NULLABLE_STR,
}, optional=frozenset({"host"}))

ACL_REQUEST_SCHEMAS: dict[tuple[int, int], Struct] = {
    (DESCRIBE_ACLS, 0): _FILTER,
    (CREATE_ACLS, 0): Struct({"creations": ListOf(_BINDING)}),
    (DELETE_ACLS, 0): Struct({"filters": ListOf(_FILTER)}),
}

ACL_RESPONSE_SCHEMAS: dict[tuple[int, int], Struct] = {
    (DESCRIBE_ACLS, 0): Struct({
        "error_code": ERROR_CODE,
        "error_message": NULLABLE_STR,
        "resources": ListOf(Struct({
            "resource_type": STR, "resource_name": STR, "pattern_type": STR,
            "acls": ListOf(Struct({"principal": STR, "operation": STR,
                                   "permission_type": STR, "host": STR},
                                  optional=frozenset({"host"}))),
        })),
    }),
    (CREATE_ACLS, 0): Struct({
        "results": ListOf(Struct({"error_code": ERROR_CODE, "error_message": NULLABLE_STR})),
    }),
    (DELETE_ACLS, 0): Struct({
        "filter_results": ListOf(Struct({
            "error_code": ERROR_CODE, "error_message": NULLABLE_STR,
            "matching_acls": ListOf(_BINDING),
        })),
    }),
}
