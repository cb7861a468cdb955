"""Kafka's OffsetDelete on the group service (``api.GroupApi``): what
``kafka-consumer-groups --delete-offsets`` (Kafka's Admin ``deleteConsumerGroupOffsets``)
asks for. Only the Kafka port serves it (tslog's protocol has no twin); its adapter
(``server/kafka/offset_delete_api.py``) translates, and the request gate's ``GatedGroups``
judges the group's Delete ACL and each topic's Read ACL first, passing the denied topics.

Kafka's rules, in its order: the group must exist (GROUP_ID_NOT_FOUND: no members and no
committed offset), a classic group of another protocol type than "consumer" must be empty
(NON_EMPTY_GROUP); then per partition its existence (UNKNOWN_TOPIC_OR_PARTITION); a topic
some member of the group is subscribed to keeps its offsets (GROUP_SUBSCRIBED_TO_TOPIC on
each of its partitions). The rest are deleted together, in order with the group's commits
(``CommittedOffsets``); a partition without a committed offset answers no error, as in
Kafka.

Subscriptions: a classic member's are read from its metadata in the group's chosen
protocol (``consumer_protocol.subscription_topics``); a member whose metadata does not read
so counts as subscribed to every topic, so an active group never loses offsets by a
misreading (Kafka lets those go). A member of tslog's own protocol (KIP-848) is subscribed
to the topics its heartbeats name.
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from .consumer_protocol import subscription_topics
from .requests import OffsetDeleteRequest, OffsetsDeleted

NOTHING_DENIED: frozenset[str] = frozenset()
_EVERY_TOPIC = None  # a subscription that could not be read
_TOPIC_DENIED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def _group_problem(api, group_id: str) -> int:
    """The refusal of the whole request (0: none)."""
    placement = api.placement()
    if placement:
        return int(placement)
    coordinator = api.groups.coordinator
    native = coordinator is not None and bool(coordinator.describe(group_id).members)
    classic = api.classic.has_members(group_id)
    if not (native or classic or api.offsets.has_offsets(group_id)):
        return int(ErrorCode.GROUP_ID_NOT_FOUND)
    if classic and (api.classic.describe(group_id).protocol_type or "consumer") != "consumer":
        return int(ErrorCode.NON_EMPTY_GROUP)
    return 0


def _subscribed(api, group_id: str) -> frozenset[str] | None:
    """Every topic a member of the group subscribes to (None: every topic)."""
    topics: set[str] = set()
    coordinator = api.groups.coordinator
    if coordinator is not None:
        for member in coordinator.describe(group_id).members:
            topics |= member.subscribed_topics
    if api.classic.has_members(group_id):
        for member in api.classic.describe(group_id).members:
            read = subscription_topics(member.metadata)
            if read is _EVERY_TOPIC:
                return _EVERY_TOPIC
            topics |= read
    return frozenset(topics)


def _partition_code(api, topic: str, partition: int, subscribed) -> int:
    known = api.topics.topics.get(topic)
    if known is None or not 0 <= partition < known.partitions:
        return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if subscribed is _EVERY_TOPIC or topic in subscribed:
        return int(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
    return 0


async def offset_delete(api, request: OffsetDeleteRequest,
                        denied: frozenset = NOTHING_DENIED) -> OffsetsDeleted:
    group_id = request.group_id
    refused = _group_problem(api, group_id)
    if refused:
        return OffsetsDeleted(refused, [])
    subscribed = _subscribed(api, group_id)
    codes = [_TOPIC_DENIED if topic in denied else
             _partition_code(api, topic, partition, subscribed)
             for topic, partition in request.partitions]
    committed = api.offsets.fetch(group_id)
    present = [tp for tp, code in zip(request.partitions, codes)
               if not code and tp in committed]
    if present:
        try:
            await api.offsets.forget_partitions(group_id, present)
        except OSError:  # the store could not take it: nothing is known deleted
            return OffsetsDeleted(int(ErrorCode.KAFKA_STORAGE_ERROR), [])
    return OffsetsDeleted(0, codes)
