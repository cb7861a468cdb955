"""Kafka's consumer protocol bytes: the subscription a classic member joins with and the
assignment its leader hands out (``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment``, version 0, big-endian as the rest of Kafka's wire).

Why here: a group's one view (``catalog``) shows a classic member's partitions read from
the bytes its leader wrote, and gives a KIP-848 member, whose partitions the coordinator
knows, the same bytes when Kafka's DescribeGroups asks, so Kafka's admin clients read
every group the same way. Sans-I/O, no state.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")
_NO_USER_DATA = _INT32.pack(0)  # user data: zero bytes (librdkafka and Java read it alike)


def _string(text: str) -> bytes:
    data = text.encode()
    return _INT16.pack(len(data)) + data


def by_topic(partitions: Iterable[tuple[str, int]]) -> list[dict]:
    """(topic, partition) pairs as ``[{"topic", "partitions"}]``, both sorted."""
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        topics.setdefault(topic, []).append(partition)
    return [{"topic": topic, "partitions": parts} for topic, parts in topics.items()]


def encode_subscription(topics: Iterable[str]) -> bytes:
    """ConsumerProtocolSubscription v0: version, [topic], user data."""
    names = sorted(topics)
    return (_INT16.pack(0) + _INT32.pack(len(names)) + b"".join(map(_string, names))
            + _NO_USER_DATA)


def encode_assignment(partitions: Iterable[tuple[str, int]]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [topic, [partition]], user data."""
    topics = by_topic(partitions)
    out = [_INT16.pack(0), _INT32.pack(len(topics))]
    for entry in topics:
        numbers = entry["partitions"]
        out += [_string(entry["topic"]), _INT32.pack(len(numbers)),
                struct.pack(f">{len(numbers)}i", *numbers)]
    return b"".join(out) + _NO_USER_DATA


def consumer_assignment(data: bytes) -> list[dict]:
    """Kafka's ConsumerProtocolAssignment (int16 version, [topic, [partition]], user data)
    as ``[{"topic", "partitions"}]``; [] for bytes that are not one (a leader's bytes are
    any client's, so they are read defensively)."""
    try:
        (count,), at = _INT32.unpack_from(data, 2), 6
        topics = []
        for _ in range(min(count, len(data))):
            (length,) = _INT16.unpack_from(data, at)
            topic = data[at + 2:at + 2 + length].decode()
            (partitions,) = _INT32.unpack_from(data, at + 2 + length)
            at += 6 + length
            numbers = list(struct.unpack_from(f">{partitions}i", data, at))
            at += 4 * partitions
            topics.append({"topic": topic, "partitions": sorted(n for n in numbers if n >= 0)})
        return topics
    except (struct.error, UnicodeDecodeError, ValueError, MemoryError):
        return []


def subscription_topics(metadata: bytes) -> frozenset[str] | None:
    """The topics of a ConsumerProtocolSubscription (int16 version, then an int32 count of
    int16-length topic names; later versions only append fields), or None if the bytes are
    not one (a member's metadata is any client's, so it is read defensively)."""
    try:
        _, count = struct.unpack_from(">hi", metadata, 0)
        position, topics = 6, []
        if not 0 <= count <= len(metadata):
            return None
        for _ in range(count):
            (size,) = _INT16.unpack_from(metadata, position)
            if size < 0 or position + 2 + size > len(metadata):
                return None
            topics.append(metadata[position + 2:position + 2 + size].decode())
            position += 2 + size
        return frozenset(topics)
    except (struct.error, UnicodeDecodeError):
        return None
