"""Kafka's DeleteRecords (21) and InitProducerId (22), served by the partition admin service
(``broker/admin/partitions.py``), the one tslog's own handlers call.

A Kafka body in, translated once into the service's typed request, its typed results back
in Kafka's shape; with the authorizer on, ``services.partition_admin`` is the connection's
``GatedPartitionAdmin``, the same gate the native port uses (Delete on each topic; Write on
any topic or ClusterAction). Refused at this edge, with INVALID_REQUEST, rather than
half-done: InitProducerId for a ``transactional_id`` (tslog has no transactions).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ...admin.partition_requests import (
    DeleteRecordsRequest,
    InitProducerIdRequest,
    RecordsCut,
)
from .data_apis import then
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)


def delete_records(services: KafkaServices, body: dict, version: int,
                   info: KafkaRequestInfo):
    """DeleteRecords (kafka-delete-records, admin clients' delete_records): one partition
    entry per one asked, in the request's order."""
    request = DeleteRecordsRequest([
        RecordsCut(topic["name"], p["partition_index"], p["offset"])
        for topic in body["topics"] for p in topic["partitions"]])

    def finish(results) -> dict:
        each = iter(results)
        return {"throttle_time_ms": 0, "topics": [{"name": topic["name"], "partitions": [
            _low_watermark(p["partition_index"], next(each))
            for p in topic["partitions"]]} for topic in body["topics"]]}

    return then(services.partition_admin.delete_records(request), finish)


def _low_watermark(partition: int, result) -> dict:
    return {"partition_index": partition, "low_watermark": result.low_watermark,
            "error_code": int(result.error_code)}


def init_producer_id(services: KafkaServices, body: dict, version: int,
                     info: KafkaRequestInfo):
    if body["transactional_id"] is not None:
        return {"throttle_time_ms": 0, "error_code": _INVALID_REQUEST, "producer_id": -1,
                "producer_epoch": -1}
    return then(services.partition_admin.init_producer_id(InitProducerIdRequest()),
                lambda result: {"throttle_time_ms": 0, "error_code": int(result.error_code),
                                "producer_id": result.producer_id,
                                "producer_epoch": result.producer_epoch})


PARTITION_ADAPTERS = {
    ApiKey.DELETE_RECORDS: delete_records,
    ApiKey.INIT_PRODUCER_ID: init_producer_id,
}
