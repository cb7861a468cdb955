"""Request and response schemas of SASL authentication and SCRAM user management.

Kafka's api keys and, in snake case, its field names: SaslHandshake (17) picks the
mechanism, SaslAuthenticate (36) carries the SCRAM messages (RFC 5802) as opaque bytes, and
Describe/AlterUserScramCredentials (50, 51) list and change the users. As in Kafka, an
upsertion carries the salt and the salted password the CLIENT computed: the plain password
never crosses the wire, and the broker keeps only the keys it derives from them.
``api_schemas.py`` merges these into its tables.
"""

from __future__ import annotations

from .schema import BIN, ERROR_CODE, INT32, INT64, NULLABLE_STR, STR, ListOf, Nullable, Struct

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51

SASL_REQUEST_SCHEMAS: dict[tuple[int, int], Struct] = {
    (SASL_HANDSHAKE, 0): Struct({"mechanism": STR}),
    (SASL_AUTHENTICATE, 0): Struct({"auth_bytes": BIN}),
    # users: null lists every user.
    (DESCRIBE_USER_SCRAM_CREDENTIALS, 0): Struct({"users": Nullable(ListOf(STR))}),
    (ALTER_USER_SCRAM_CREDENTIALS, 0): Struct({
        "deletions": ListOf(Struct({"name": STR, "mechanism": STR})),
        "upsertions": ListOf(Struct({"name": STR, "mechanism": STR, "iterations": INT32,
                                     "salt": BIN, "salted_password": BIN})),
    }),
}

SASL_RESPONSE_SCHEMAS: dict[tuple[int, int], Struct] = {
    (SASL_HANDSHAKE, 0): Struct({"error_code": ERROR_CODE, "mechanisms": ListOf(STR)}),
    (SASL_AUTHENTICATE, 0): Struct({"error_code": ERROR_CODE, "error_message": NULLABLE_STR,
                                    "auth_bytes": BIN, "session_lifetime_ms": INT64}),
    (DESCRIBE_USER_SCRAM_CREDENTIALS, 0): Struct({
        "results": ListOf(Struct({
            "name": STR, "error_code": ERROR_CODE,
            "credentials": ListOf(Struct({"mechanism": STR, "iterations": INT32})),
        })),
    }),
    (ALTER_USER_SCRAM_CREDENTIALS, 0): Struct({
        "results": ListOf(Struct({"name": STR, "error_code": ERROR_CODE,
                                  "error_message": NULLABLE_STR})),
    }),
}
