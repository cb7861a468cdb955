"""How a classic group's member assignment (the consumer protocol's bytes, written by any
Kafka client's leader) becomes the partitions `tslog groups describe` shows: read as Kafka
writes it, and anything else read as nothing rather than failing the describe."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from tslog.broker.groups.consumer_protocol import consumer_assignment


def assignment(topics: dict[str, list[int]], user_data: bytes = b"") -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for topic, partitions in topics.items():
        out += struct.pack(">h", len(topic)) + topic.encode()
        out += struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
    return out + struct.pack(">i", len(user_data)) + user_data


def test_kafkas_consumer_protocol_assignment_is_read_topic_by_topic():
    data = assignment({"events": [2, 0], "audit": [1]}, b"sticky")
    assert consumer_assignment(data) == [{"topic": "events", "partitions": [0, 2]},
                                         {"topic": "audit", "partitions": [1]}]


@given(st.binary(max_size=64))
def test_any_bytes_give_a_list_of_topics_and_never_an_error(data):
    for entry in consumer_assignment(data):
        assert isinstance(entry["topic"], str)
        assert all(partition >= 0 for partition in entry["partitions"])
