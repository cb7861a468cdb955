"""Kafka's OffsetDelete on the Kafka listener: what ``kafka-consumer-groups --delete-offsets``
(Kafka's Admin ``deleteConsumerGroupOffsets``) asks for.

Kafka's rules, in its order: the group's Delete ACL (else GROUP_AUTHORIZATION_FAILED for the
whole request), the group must exist (GROUP_ID_NOT_FOUND: no members and no committed
offset), a classic group of another protocol type than "consumer" must be empty
(NON_EMPTY_GROUP); then per topic the Read ACL (TOPIC_AUTHORIZATION_FAILED) and per
partition its existence (UNKNOWN_TOPIC_OR_PARTITION); a topic some member of the group is
subscribed to keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC on each of its partitions). The
rest are deleted together, in order with the group's commits (``CommittedOffsets``); a
partition without a committed offset answers no error, as in Kafka.

Subscriptions: a classic member's are read from its metadata in the group's chosen
protocol (Kafka's ConsumerProtocolSubscription: int16 version, then an int32 count of
int16-length topic names; later versions only append fields); a member whose metadata does
not read so counts as subscribed to every topic, so an active group never loses offsets
by a misreading (Kafka lets those go). A member of tslog's own protocol (KIP-848) is
subscribed to the topics its heartbeats name.
"""

from __future__ import annotations

import struct

from tslog.protocol.errors import ErrorCode

from ..group_handlers import coordinator_problem
from .group_apis import group_allowed, topic_allowed
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_EVERY_TOPIC = None  # a subscription that could not be read
OFFSET_DELETE = 47  # Kafka's api key (tslog's own protocol has none)


def _whole(code: int) -> dict:
    return {"error_code": int(code), "throttle_time_ms": 0, "topics": []}


def _group_problem(services: KafkaServices, info: KafkaRequestInfo, group_id: str) -> int:
    """The refusal of the whole request (0: none)."""
    placement = coordinator_problem(services)
    if placement:
        return placement
    if not group_allowed(services, info, OFFSET_DELETE, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    coordinator = services.groups.coordinator
    native = coordinator is not None and bool(coordinator.describe(group_id).members)
    classic = services.classic.has_members(group_id)
    if not (native or classic or services.offsets.has_offsets(group_id)):
        return ErrorCode.GROUP_ID_NOT_FOUND
    if classic and (services.classic.describe(group_id).protocol_type or "consumer") \
            != "consumer":
        return ErrorCode.NON_EMPTY_GROUP
    return 0


def subscription_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics of a ConsumerProtocolSubscription, or None if the bytes are not one."""
    try:
        _, count = struct.unpack_from(">hi", metadata, 0)
        position, topics = 6, []
        if not 0 <= count <= len(metadata):
            return _EVERY_TOPIC
        for _ in range(count):
            (size,) = struct.unpack_from(">h", metadata, position)
            if size < 0 or position + 2 + size > len(metadata):
                return _EVERY_TOPIC
            topics.append(metadata[position + 2:position + 2 + size].decode())
            position += 2 + size
        return frozenset(topics)
    except (struct.error, UnicodeDecodeError):
        return _EVERY_TOPIC


def _subscribed(services: KafkaServices, group_id: str) -> frozenset[str] | None:
    """Every topic a member of the group subscribes to (None: every topic)."""
    topics: set[str] = set()
    coordinator = services.groups.coordinator
    if coordinator is not None:
        for member in coordinator.describe(group_id).members:
            topics |= member.subscribed_topics
    if services.classic.has_members(group_id):
        for member in services.classic.describe(group_id).members:
            read = subscription_topics(member.metadata)
            if read is _EVERY_TOPIC:
                return _EVERY_TOPIC
            topics |= read
    return frozenset(topics)


def _partition_code(services: KafkaServices, topic: str, partition: int, topic_code: int,
                    subscribed: frozenset[str] | None) -> int:
    if topic_code:
        return topic_code
    known = services.topics.topics.get(topic)
    if known is None or not 0 <= partition < known.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if subscribed is _EVERY_TOPIC or topic in subscribed:
        return ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    return 0


async def offset_delete(services: KafkaServices, body: dict, version: int,
                        info: KafkaRequestInfo) -> dict:
    group_id = body["group_id"]
    refused = _group_problem(services, info, group_id)
    if refused:
        return _whole(refused)
    subscribed = _subscribed(services, group_id)
    gone, topics_out = [], []
    for topic in body["topics"]:
        name = topic["name"]
        topic_code = 0 if topic_allowed(services, info, "Read", name) else \
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        partitions = []
        for entry in topic["partitions"]:
            index = entry["partition_index"]
            code = _partition_code(services, name, index, topic_code, subscribed)
            if not code:
                gone.append((name, index))
            partitions.append({"partition_index": index, "error_code": int(code)})
        topics_out.append({"name": name, "partitions": partitions})
    committed = services.offsets.fetch(group_id)
    present = [tp for tp in gone if tp in committed]
    if present:
        try:
            await services.offsets.forget_partitions(group_id, present)
        except OSError:  # the store could not take it: nothing is known deleted
            return _whole(ErrorCode.KAFKA_STORAGE_ERROR)
    return {"error_code": 0, "throttle_time_ms": 0, "topics": topics_out}


OFFSET_DELETE_ADAPTERS = {OFFSET_DELETE: offset_delete}  # OffsetDelete: tslog's protocol has no twin
