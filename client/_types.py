"""The small value types of the public API (kafka-python's names and field orders)."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RecordMetadata(NamedTuple):
    """Where a produced record landed. ``offset`` and ``log_append_time`` are -1 for acks=0."""

    topic: str
    partition: int
    offset: int
    log_append_time: int
    create_time: int


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


TIMESTAMP_TYPE_CREATE_TIME = 0  # kafka-python's codes for ConsumerRecord.timestamp_type
TIMESTAMP_TYPE_LOG_APPEND_TIME = 1


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    create_time: int
    log_append_time: int
    headers: tuple  # a tuple of (str, bytes) pairs; () when the record has none

    # kafka-python's names, so a Kafka user's code reads tslog records unchanged. tslog
    # stamps every batch with its LogAppendTime, so that is the record's timestamp.
    @property
    def timestamp(self) -> int:
        """The LogAppendTime (ms), as kafka-python's ``ConsumerRecord.timestamp``."""
        return self.log_append_time

    @property
    def timestamp_type(self) -> int:
        """``TIMESTAMP_TYPE_LOG_APPEND_TIME`` (1), kafka-python's code for LogAppendTime (its
        CreateTime is 0): ``timestamp`` is always the LogAppendTime here."""
        return TIMESTAMP_TYPE_LOG_APPEND_TIME


class ColumnBatch(NamedTuple):
    """One fetched batch as columns (``Consumer.poll_batches``): records ``start`` onwards.

    ``columns`` is a ``tslog.protocol.records.RecordColumns`` (numpy arrays and views of the
    fetched bytes); record ``i`` has offset ``columns.base_offset + i``. Records before
    ``start`` were read before (or lie before the position the consumer was sought to).
    ``tslog.protocol.records.to_arrow(columns).slice(start)`` gives an Arrow RecordBatch.
    """

    topic: str
    partition: int
    start: int
    columns: object  # tslog.protocol.records.RecordColumns


class PartitionInfo(NamedTuple):
    """One partition as the cluster metadata describes it."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: list
    isr: list
    error_code: int = 0


class TopicDescription(NamedTuple):
    name: str
    partitions: list  # of PartitionInfo, sorted by partition


class ConfigEntry(NamedTuple):
    name: str
    value: str
    source: str  # "default" | "broker" | "topic"


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next record the group will read) and its metadata string."""

    offset: int
    metadata: str = ""


class GroupListing(NamedTuple):
    """One consumer group as ``Admin.list_consumer_groups`` sees it."""

    group_id: str
    state: str  # "EMPTY" | "ASSIGNING" | "RECONCILING" | "STABLE"
    members: int


class MemberDescription(NamedTuple):
    """One member of a group: what it subscribes to, owns, is giving up and will own."""

    member_id: str
    member_epoch: int
    state: str  # the member's reconciliation state, e.g. "STABLE", "UNREVOKED_PARTITIONS"
    subscribed_topics: list  # of str
    assigned: list  # of TopicPartition, sorted: what the member owns now
    revoking: list  # of TopicPartition: what it was told to give up and has not yet
    target: list  # of TopicPartition: what the coordinator means it to own
    client_id: str = ""    # the member's client id (its requests' header), "" if unknown
    client_host: str = ""  # the address it joined from, "" from older brokers


class GroupDescription(NamedTuple):
    """A consumer group's state, epochs, assignor and members (``describe_consumer_groups``)."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list  # of MemberDescription


class AclBinding(NamedTuple):
    """One ACL (docs/security.md): ``principal`` ("User:alice", "User:*") is allowed or
    denied ``operation`` on resources of ``resource_type`` ("topic", "group", "cluster")
    named ``resource_name`` ("*" = all) literally or, with ``pattern_type`` "prefixed", by
    prefix, when connected from ``host`` (an IP address, or "*": any). The cluster resource
    is named "kafka-cluster"."""

    principal: str
    resource_type: str
    resource_name: str
    operation: str
    permission: str = "allow"
    pattern_type: str = "literal"
    host: str = "*"


class AclBindingFilter(NamedTuple):
    """Which ACLs to list or delete: None matches anything. ``pattern_type`` "match"
    selects every ACL that applies to ``resource_name`` (its literal, "*", its prefixes)."""

    principal: str | None = None
    resource_type: str | None = None
    resource_name: str | None = None
    operation: str | None = None
    permission: str | None = None
    pattern_type: str | None = None
    host: str | None = None


class PartitionReassignment(NamedTuple):
    """A reassignment under way (``Admin.list_partition_reassignments``), as Kafka's
    ``PartitionReassignment``, plus its progress: the leader's log end offset and each
    added replica's (as the leader last saw it; -1 when unknown)."""

    replicas: list  # of int: the current replica set, original replicas first
    adding_replicas: list  # of int: joining, they stay once it completes
    removing_replicas: list  # of int: leaving once it completes
    leader: int
    isr: list  # of int
    log_end_offset: int  # the leader's, -1 if no broker reported it
    replica_log_end_offsets: dict  # adding replica -> its log end offset at the leader

    def offsets_behind(self) -> dict:
        """Adding replica -> how many offsets it still lacks (None when unknown)."""
        if self.log_end_offset < 0:
            return {b: None for b in self.adding_replicas}
        return {b: None if leo < 0 else max(0, self.log_end_offset - leo)
                for b, leo in self.replica_log_end_offsets.items()}
