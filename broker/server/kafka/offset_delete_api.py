"""Kafka's OffsetDelete on the Kafka listener: what ``kafka-consumer-groups --delete-offsets``
(Kafka's Admin ``deleteConsumerGroupOffsets``) asks for.

The body is translated once into the group service's ``OffsetDeleteRequest`` and its
``OffsetsDeleted`` back into Kafka's answer; Kafka's rules live in the service
(``groups/offset_delete.py``). ``services.group_api`` is the service or, with the authorizer
on, the connection's ``GatedGroups`` (``security/group_gate.py``), which checks the group's
Delete ACL (else GROUP_AUTHORIZATION_FAILED for the whole request) and each topic's Read ACL
(TOPIC_AUTHORIZATION_FAILED on its partitions), and counts a denial once.
"""

from __future__ import annotations

from ...groups.requests import OffsetDeleteRequest
from .request_info import KafkaRequestInfo
from .services import KafkaServices

OFFSET_DELETE = 47  # Kafka's api key (tslog's own protocol has none)


async def offset_delete(services: KafkaServices, body: dict, version: int,
                        info: KafkaRequestInfo) -> dict:
    deleted = await services.group_api.offset_delete(OffsetDeleteRequest(
        body["group_id"], [(topic["name"], entry["partition_index"])
                           for topic in body["topics"] for entry in topic["partitions"]]))
    if deleted.error_code:
        return {"error_code": deleted.error_code, "throttle_time_ms": 0, "topics": []}
    codes = iter(deleted.codes)
    return {"error_code": 0, "throttle_time_ms": 0, "topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": entry["partition_index"], "error_code": next(codes)}
            for entry in topic["partitions"]]} for topic in body["topics"]]}


OFFSET_DELETE_ADAPTERS = {OFFSET_DELETE: offset_delete}  # tslog's protocol has no twin
