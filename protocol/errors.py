"""Error codes that cross the wire, and the protocol-violation exceptions.

Why one table: the broker turns failures into numbers and the client turns numbers back into
decisions (retry, refresh metadata, give up). Both sides must agree on the number, whether a
retry can help, and what to tell a user, so all three live on the enum member and nowhere else.

Numbers are frozen once released; names may change. Where Apache Kafka has the same error we
use Kafka's number, so people who know Kafka read our logs without a lookup table. tslog's own
codes start at 1000 to keep clear of Kafka's space. Only errors that can be sent in a response
belong here; purely local failures are ordinary exceptions.

The exception split follows h11: ``LocalProtocolError`` means this side misused the API (a bug
here), ``RemoteProtocolError`` means the peer sent something we cannot accept. Each carries an
``error_code`` hint so a server knows what to answer before it closes the connection.

``BatchFormatError`` is the same idea for a record batch: the bytes came from a peer or a disk
and cannot be a batch a reader could decode; a broker answers CORRUPT_MESSAGE and keeps the
connection. It lives here, below every module of the batch format, so the header checks
(``batch_header.py``) and the records-section checks (``_record_check.py``) share it.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """A wire error code; ``code.retriable`` and ``code.message`` come from the table below."""

    retriable: bool
    message: str

    def __new__(cls, value: int, retriable: bool, message: str) -> ErrorCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.retriable = retriable
        member.message = message
        return member

    UNKNOWN_SERVER_ERROR = -1, False, "The server hit an unexpected error processing the request."
    NONE = 0, False, "No error."
    OFFSET_OUT_OF_RANGE = 1, False, "The requested offset is outside the partition's log."
    CORRUPT_MESSAGE = 2, True, "A record batch failed its CRC or format checks."
    UNKNOWN_TOPIC_OR_PARTITION = 3, True, "This broker does not host this topic-partition."
    INVALID_FETCH_SIZE = 4, False, "The requested fetch size is invalid."
    LEADER_NOT_AVAILABLE = 5, True, "The partition has no leader right now (election under way)."
    NOT_LEADER_OR_FOLLOWER = 6, True, "This broker is not the leader (or a replica) of the partition."
    REQUEST_TIMED_OUT = 7, True, "The request timed out."
    BROKER_NOT_AVAILABLE = 8, True, "The broker is not available."
    REPLICA_NOT_AVAILABLE = 9, True, "The replica is not available for the partition."
    MESSAGE_TOO_LARGE = 10, False, "A batch or request is larger than the broker accepts."
    STALE_CONTROLLER_EPOCH = 11, False, "The request came from a controller that is no longer current."
    OFFSET_METADATA_TOO_LARGE = 12, False, "The metadata of the offset commit is too large."
    NETWORK_EXCEPTION = 13, True, "The connection closed before a response was received."
    COORDINATOR_NOT_AVAILABLE = 15, True, "The group coordinator is not available."
    NOT_COORDINATOR = 16, True, "This broker is not the group's coordinator."
    INVALID_TOPIC_EXCEPTION = 17, False, "The topic name is invalid."
    RECORD_LIST_TOO_LARGE = 18, False, "The batch is larger than the topic's segment size."
    NOT_ENOUGH_REPLICAS = 19, True, "Fewer in-sync replicas than min.insync.replicas; not written."
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20, True, "Written, but to fewer in-sync replicas than required."
    INVALID_REQUIRED_ACKS = 21, False, "The produce request's acks value is invalid."
    ILLEGAL_GENERATION = 22, False, "The generation id is not the classic group's current one."
    INCONSISTENT_GROUP_PROTOCOL = 23, False, "The group protocol does not match the group's."
    INVALID_GROUP_ID = 24, False, "The group id is invalid."
    UNKNOWN_MEMBER_ID = 25, False, "The group coordinator does not know this member id."
    INVALID_SESSION_TIMEOUT = 26, False, "The session timeout is outside the broker's allowed range."
    REBALANCE_IN_PROGRESS = 27, False, "The classic group is rebalancing; rejoin it."
    TOPIC_AUTHORIZATION_FAILED = 29, False, "Not authorized to access this topic."
    GROUP_AUTHORIZATION_FAILED = 30, False, "Not authorized to access this group."
    CLUSTER_AUTHORIZATION_FAILED = 31, False, "Not authorized for this cluster operation."
    INVALID_TIMESTAMP = 32, False, "A record's CreateTime is outside the topic's accepted range."
    UNSUPPORTED_SASL_MECHANISM = 33, False, "The broker does not support this SASL mechanism."
    ILLEGAL_SASL_STATE = 34, False, "This request is not valid in the connection's authentication state."
    UNSUPPORTED_VERSION = 35, False, "The broker does not support this version of the API."
    TOPIC_ALREADY_EXISTS = 36, False, "A topic with this name already exists."
    INVALID_PARTITIONS = 37, False, "The number of partitions is invalid."
    INVALID_REPLICATION_FACTOR = 38, False, "The replication factor is invalid for this cluster."
    INVALID_REPLICA_ASSIGNMENT = 39, False, "The replica assignment is invalid."
    INVALID_CONFIG = 40, False, "The configuration is invalid."
    NOT_CONTROLLER = 41, True, "This broker is not the controller."
    INVALID_REQUEST = 42, False, "The request is malformed; see the broker log."
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43, False, "The batch format does not support this request."
    POLICY_VIOLATION = 44, False, "The request violates a configured policy."
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45, False, "The broker received an out-of-order sequence number."
    DUPLICATE_SEQUENCE_NUMBER = 46, False, "The broker received a duplicate sequence number."
    INVALID_PRODUCER_EPOCH = 47, False, "The producer epoch is older than the broker's."
    SECURITY_DISABLED = 54, False, "Security features are disabled on this broker."
    KAFKA_STORAGE_ERROR = 56, True, "The broker failed to read or write its log on disk."
    SASL_AUTHENTICATION_FAILED = 58, False, "Authentication failed (unknown user or wrong credentials)."
    UNKNOWN_PRODUCER_ID = 59, False, "The broker has no state for this producer id."
    REASSIGNMENT_IN_PROGRESS = 60, False, "A reassignment of this partition is under way."
    NON_EMPTY_GROUP = 68, False, "The group still has members."
    GROUP_ID_NOT_FOUND = 69, False, "The group id does not exist."
    TOPIC_DELETION_DISABLED = 73, False, "Topic deletion is disabled on this cluster."
    FENCED_LEADER_EPOCH = 74, True, "The leader epoch in the request is older than the broker's."
    UNKNOWN_LEADER_EPOCH = 75, True, "The leader epoch in the request is newer than the broker's."
    UNSUPPORTED_COMPRESSION_TYPE = 76, False, "The compression type is not supported."
    STALE_BROKER_EPOCH = 77, False, "The broker epoch has changed."
    OFFSET_NOT_AVAILABLE = 78, True, "The new leader's high watermark has not caught up yet."
    MEMBER_ID_REQUIRED = 79, False, "Join the classic group again with the member id given."
    PREFERRED_LEADER_NOT_AVAILABLE = 80, True, "The preferred leader is not live or not in sync."
    GROUP_MAX_SIZE_REACHED = 81, False, "The group already has as many members as allowed."
    ELECTION_NOT_NEEDED = 84, False, "The preferred replica leads the partition already."
    NO_REASSIGNMENT_IN_PROGRESS = 85, False, "No reassignment of this partition is under way."
    GROUP_SUBSCRIBED_TO_TOPIC = 86, False, "The group's members are subscribed to the topic."
    INVALID_RECORD = 87, False, "A record failed the broker's validation and was rejected."
    RESOURCE_NOT_FOUND = 91, False, "The requested resource (user, ACL) does not exist."
    DUPLICATE_RESOURCE = 92, False, "The request names the same resource twice."
    UNACCEPTABLE_CREDENTIAL = 93, False, "The credential is not acceptable (iterations, salt, mechanism)."
    FENCED_MEMBER_EPOCH = 110, False, "The member epoch is fenced; rejoin the group with epoch 0."
    STALE_MEMBER_EPOCH = 113, False, "The member epoch is not the current one; heartbeat first."
    UNKNOWN_API_KEY = 1000, False, "The broker does not know this API key."
    # Not retriable: a connection limit (the message names it and its value) is the
    # operator's decision and rarely lifts within a retry's backoff; the caller hears of it
    # at once instead of after silent retries. The broker closes the connection after it.
    TOO_MANY_CONNECTIONS = 1001, False, "The broker refused this connection: a connection limit is reached."

    @classmethod
    def from_wire(cls, value: int) -> ErrorCode:
        """Map a number read off the wire to a member; unknown numbers become UNKNOWN_SERVER_ERROR.

        A newer broker may send codes this client predates; treating them as a non-retriable
        server error is the safe reading.
        """
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class ProtocolError(Exception):
    """A violation of the tslog protocol. Abstract: raise one of the two subclasses.

    Attributes:
        error_code: what a server should answer (if it can still answer) before closing.
    """

    def __init__(self, msg: str, error_code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        if type(self) is ProtocolError:
            raise TypeError("ProtocolError is abstract; raise LocalProtocolError or RemoteProtocolError")
        super().__init__(msg)
        self.error_code = error_code


class LocalProtocolError(ProtocolError):
    """This side tried to do something the protocol forbids (a bug in the caller)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes we cannot accept: garbage, a truncated stream, an oversized frame."""


class BatchFormatError(ValueError):
    """The bytes are not a well-formed record batch (bad length, magic, counts or CRC)."""

    error_code = ErrorCode.CORRUPT_MESSAGE  # what a broker answers for such a batch


class CorruptRecordsError(BatchFormatError):
    """The records section does not match its header or its own size fields."""
