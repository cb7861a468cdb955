"""The group service's requests and results, the same whichever front door a request came in.

Why typed: each protocol's adapter translates its own body into these once, at its edge
(``server/group_handlers.py`` for tslog's frames, ``server/kafka/group_admin_apis.py`` and
``group_apis.py`` for Kafka's), the gate (``security/group_gate.py``) judges them, and the
service (``api.py``) never sees either wire format. Results come in the request's order, so an
adapter writes its answer by walking its own request beside them.

Each type is a ``NamedTuple`` naming its fields. As in the data service
(``data/requests.py``), a per-partition entry (``CommitPartition``, ``FetchedOffset``) is
built by the adapters and the service as a plain tuple of the same fields in the same order
and read by position, and a request's own tuple with ``make``: a commit or fetch makes one
per partition, and a tuple subclass's constructor is a Python call each. Code that is not
on that path may build the named types; the service reads either alike.
"""

from __future__ import annotations

from typing import NamedTuple

from .catalog import GroupSummary, GroupView

make = tuple.__new__
"""``make(Type, (field, ...))``: a request's tuple built without its Python-level
constructor, as ``data/requests.py`` builds its own."""

GROUP_KEY_TYPE = 0  # FindCoordinator's key type for a group (1 is a transactional id)


class FindCoordinatorRequest(NamedTuple):
    keys: list[str]
    key_type: int = GROUP_KEY_TYPE  # only groups have a coordinator here


class Coordinator(NamedTuple):
    """One key's coordinator: the controller's node id (-1: none elected), or an error."""

    error_code: int
    node_id: int


class Coordinators(NamedTuple):
    coordinators: list[Coordinator]  # in the request's order
    cluster: object  # the ``ClusterView``: each port answers its own listener's address of
    # the node, and COORDINATOR_NOT_AVAILABLE for a node it has none of


class ListGroupsRequest(NamedTuple):
    states: frozenset[str] | None  # tslog's spelling (``PREPARING_REBALANCE``); None: any
    kinds: frozenset[str] | None = None  # ``catalog.CONSUMER`` / ``catalog.CLASSIC``; None: any


class GroupsListed(NamedTuple):
    error_code: int  # the placement: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, or 0
    groups: list[GroupSummary]  # sorted by id


class DescribeGroupsRequest(NamedTuple):
    groups: list[str]
    api_key: int  # which API asked (ConsumerGroupDescribe 69, Kafka's DescribeGroups 15):
    # a denial is counted under its name


class Described(NamedTuple):
    error_code: int  # a denial, the placement, GROUP_ID_NOT_FOUND, or 0
    view: GroupView | None  # None with an error


class DeleteGroupsRequest(NamedTuple):
    groups: list[str]


class CommitPartition(NamedTuple):
    topic: str
    partition: int
    offset: int
    metadata: str


class OffsetCommitRequest(NamedTuple):
    group_id: str
    member_id: str  # "" outside group management
    generation: int  # the member's epoch (tslog) or its group's generation (Kafka's classic
    # protocol); below 0 outside group management
    partitions: list[CommitPartition]  # in the client's order, whatever their topics
    classic: bool = False  # a Kafka client's: a group id without tslog members is fenced by
    # the classic group's rules, and an offset below -1 is INVALID_REQUEST


class OffsetFetchRequest(NamedTuple):
    group_id: str
    partitions: list[tuple[str, int]] | None  # (topic, partition); None: every committed one
    classic: bool = False  # a Kafka client's: the group id and the placement are checked
    # (tslog's port answers from the committed offsets on any broker)


class FetchedOffset(NamedTuple):
    topic: str
    partition: int
    offset: int  # -1: none committed
    metadata: str
    error_code: int  # TOPIC_AUTHORIZATION_FAILED for a denied topic, else 0


class OffsetsFetched(NamedTuple):
    error_code: int  # the group's: a denial, INVALID_GROUP_ID, the placement, or 0
    partitions: list[FetchedOffset]  # in the request's order (sorted for every one); empty
    # with an error
    error_message: str | None = None


class OffsetDeleteRequest(NamedTuple):
    """Kafka's OffsetDelete (its port only): forget the group's offsets of ``partitions``."""

    group_id: str
    partitions: list[tuple[str, int]]  # (topic, partition), in the client's order


class OffsetsDeleted(NamedTuple):
    error_code: int  # the whole request's refusal, or 0
    codes: list[int]  # each partition's, in the request's order; empty with an error


# -- membership: tslog's ConsumerGroupHeartbeat (KIP-848), Kafka's classic protocol ----------


class ConsumerGroupHeartbeatRequest(NamedTuple):
    group_id: str
    member_id: str
    member_epoch: int
    subscribed_topics: list[str] | None  # None: unchanged since the last heartbeat
    owned: list[tuple[str, int]] | None  # the partitions the member owns; None: unchanged
    client: tuple[str, str]  # (client id, host), from the request's header and its peer


class JoinGroupRequest(NamedTuple):
    group_id: str
    member_id: str
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata)
    require_known_member_id: bool  # JoinGroup v4+: a new member joins twice
    group_instance_id: str | None
    client_host: str


class SyncGroupRequest(NamedTuple):
    group_id: str
    generation_id: int
    member_id: str
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict[str, bytes]  # the leader's: member id -> assignment


class HeartbeatRequest(NamedTuple):
    """Kafka's classic Heartbeat (12)."""

    group_id: str
    generation_id: int
    member_id: str


class LeaveGroupRequest(NamedTuple):
    group_id: str
    member_ids: list[str]


class Left(NamedTuple):
    error_code: int  # the whole request's refusal, or 0
    codes: list[int]  # each member's, in the request's order; empty with an error
