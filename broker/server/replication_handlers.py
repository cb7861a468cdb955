"""Handlers of the replication APIs: OffsetForLeaderEpoch and InitProducerId.

OffsetForLeaderEpoch is what a follower of a new leader asks before fetching (KIP-101): the
end, in the leader's log, of the latest epoch the follower knows; the follower truncates
there. InitProducerId hands an idempotent producer a cluster-unique id from the view.
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode

from ..replication.partition import LEADER
from ..data.error_codes import missing_code
from .services import ReplicationApis

log = logging.getLogger("tslog.broker.handlers")


def handle_offset_for_leader_epoch(services: ReplicationApis, body: dict) -> dict:
    topics_out = []
    for group in body["topics"]:
        parts_out = []
        for entry in group["partitions"]:
            part = services.replicas.get(group["topic"], entry["partition"])
            result = {"partition": entry["partition"], "error_code": 0, "leader_epoch": -1,
                      "end_offset": -1}
            if part is None:
                result["error_code"] = missing_code(services.topics, group["topic"],
                                                    entry["partition"])
            elif part.role != LEADER:
                result["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            else:
                result["leader_epoch"], result["end_offset"] = part.replica.epochs.end_offset_for(
                    entry["leader_epoch"], part.log.log_end_offset)
            parts_out.append(result)
        topics_out.append({"topic": group["topic"], "partitions": parts_out})
    return {"topics": topics_out}


async def handle_init_producer_id(services: ReplicationApis, body: dict) -> dict:
    try:
        producer_id = await services.cluster.allocate_producer_id()
    except Exception:  # noqa: BLE001 - the store is unreachable: the client retries
        log.exception("allocating a producer id failed")
        return {"error_code": ErrorCode.BROKER_NOT_AVAILABLE, "producer_id": -1,
                "producer_epoch": -1}
    return {"error_code": 0, "producer_id": producer_id, "producer_epoch": 0}
