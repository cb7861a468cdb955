"""DeleteRecords (Kafka's API 21, ``kafka-delete-records``; Redis Streams' XTRIM by id):
move each partition's log start up to an offset, durably, freeing whole segments below it.

Why the leader only, and the high watermark as the bound: records at or past the high
watermark are not committed yet (Kafka refuses them with OFFSET_OUT_OF_RANGE too), and
followers learn the new start from the leader's Fetch answers (``log_start_offset``), which
they follow as Kafka's followers do (``replication/fetcher.py``). Both front doors end here:
the Kafka listener's adapter calls this handler. The fsync of the start offset and the
unlinks run in a thread (storage does no asyncio), so the event loop never waits on a disk.
"""

from __future__ import annotations

import asyncio

from tslog.protocol.errors import ErrorCode

from ..replication.partition import LEADER
from ..data.error_codes import error_code_for, missing_code
from .services import DataPath

HIGH_WATERMARK = -1  # an offset of -1 means "up to the high watermark", as in Kafka


async def handle_delete_records(services: DataPath, body: dict) -> dict:
    topics_out = []
    for group in body["topics"]:
        topic = group["topic"]
        partitions = []
        for entry in group["partitions"]:
            code, low = await _delete_one(services, topic, entry["partition"], entry["offset"])
            partitions.append({"partition": entry["partition"], "low_watermark": low,
                               "error_code": code})
        topics_out.append({"topic": topic, "partitions": partitions})
    return {"topics": topics_out}


async def _delete_one(services: DataPath, topic: str, partition: int,
                      offset: int) -> tuple[int, int]:
    """(error code, the partition's log start offset afterwards, -1 on error)."""
    part = services.replicas.get(topic, partition)
    if part is None:
        return missing_code(services.topics, topic, partition), -1
    if part.role != LEADER:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
    high_watermark = part.high_watermark
    target = high_watermark if offset == HIGH_WATERMARK else offset
    if not 0 <= target <= high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    try:
        low = await asyncio.to_thread(part.log.delete_records_before, target)
    except Exception as exc:  # noqa: BLE001 - a closed log, a disk error: a code, logged
        return error_code_for(exc, f"delete records of {topic}-{partition}"), -1
    return 0, low
