"""tslog's partition admin APIs (DeleteRecords, InitProducerId, OffsetForLeaderEpoch,
Alter/ListPartitionReassignments, ElectLeaders, OffsetsAtTimes): its frames' bodies
translated, once, into ``PartitionAdmin``'s typed requests (``broker/admin``), and its
results back into the response bodies.

Each handler takes ``(admin, body)``: ``admin`` is the broker's ``PartitionAdmin`` or, with
the authorizer on, the connection's ``GatedPartitionAdmin`` in front of it
(``security/partition_admin_gate.py``), which has the same methods and answers a refused
whole request with a ``RequestDenied``. The Kafka port's adapters (``kafka/partition_apis.py``,
``kafka/reassign_apis.py``) call the same service, so the two front doors differ only in
their translation.
"""

from __future__ import annotations

import inspect

from tslog.protocol.int_columns import pack_int64

from ..admin.partition_requests import (
    AlterReassignmentsRequest,
    DeleteRecordsRequest,
    ElectLeadersRequest,
    InitProducerIdRequest,
    ListReassignmentsRequest,
    Move,
    OffsetForLeaderEpochRequest,
    OffsetsAtTimesRequest,
    RecordsCut,
)
from ..data.requests import RequestDenied, make


def _then(result, finish):
    """``finish(result)`` now, or once the service's awaitable is done."""
    if inspect.isawaitable(result):
        async def later():
            return finish(await result)
        return later()
    return finish(result)


def _denied_body(denied: RequestDenied) -> dict:
    return {"error_code": denied.error_code, "error_message": denied.error_message}


def _answered(body: dict, results, entry) -> dict:
    """``{"topics": [...]}`` in the request's shape, one ``entry(asked, result)`` per
    partition asked, walking the body beside the results."""
    each = iter(results)
    return {"topics": [{"topic": group["topic"], "partitions": [
        entry(asked, next(each)) for asked in group["partitions"]]} for group in body["topics"]]}


def _grouped(results, entry) -> dict:
    """``{"topics": [...]}`` from results that name their own partitions (a listing): one
    topic entry per topic, in the order each first appears."""
    topics: dict[str, list[dict]] = {}
    for result in results:
        topics.setdefault(result.topic, []).append(entry(result))
    return {"topics": [{"topic": topic, "partitions": items} for topic, items in topics.items()]}


def _named(topics: list[dict] | None) -> list[tuple[str, int]] | None:
    return None if topics is None else [(group["topic"], partition) for group in topics
                                        for partition in group["partitions"]]


def handle_delete_records(admin, body: dict):
    request = DeleteRecordsRequest([RecordsCut(group["topic"], p["partition"], p["offset"])
                                    for group in body["topics"] for p in group["partitions"]])
    return _then(admin.delete_records(request), lambda results: _answered(
        body, results, lambda asked, result: {"partition": asked["partition"],
                                              "low_watermark": result.low_watermark,
                                              "error_code": result.error_code}))


def handle_init_producer_id(admin, body: dict):
    return _then(admin.init_producer_id(InitProducerIdRequest()), lambda result: {
        "error_code": result.error_code, "producer_id": result.producer_id,
        "producer_epoch": result.producer_epoch})


def handle_offset_for_leader_epoch(admin, body: dict) -> dict:
    """A follower asks this of each new leader: loops and plain tuples (the entries'
    fields in order, as ``partition_requests.EpochQuery``), not comprehensions and named
    tuples, so a request costs the old untyped handler's calls per partition."""
    queries = []
    for group in body["topics"]:
        topic = group["topic"]
        for entry in group["partitions"]:
            queries.append((topic, entry["partition"], entry["leader_epoch"]))
    results = admin.offset_for_leader_epoch(make(OffsetForLeaderEpochRequest,
                                                 (body["replica_id"], queries)))
    if type(results) is RequestDenied:
        return _denied_body(results)
    each = iter(results)
    topics = []
    for group in body["topics"]:
        partitions = []
        for entry, (code, leader_epoch, end_offset) in zip(group["partitions"], each):
            partitions.append({"partition": entry["partition"], "error_code": code,
                               "leader_epoch": leader_epoch, "end_offset": end_offset})
        topics.append({"topic": group["topic"], "partitions": partitions})
    return {"topics": topics}


def handle_offsets_at_times(admin, body: dict) -> dict:
    """A lookup path (charts ask it for every bucket edge): loops and plain tuples, as
    ``handle_offset_for_leader_epoch``. Version 1 says its times once (``timestamps`` at
    the top), and only it does."""
    if "timestamps" in body:
        return _offsets_at_shared_times(admin, body)
    queries = []
    for group in body["topics"]:
        topic = group["topic"]
        for entry in group["partitions"]:
            queries.append((topic, entry["partition"], entry["timestamps"]))
    each = iter(admin.offsets_at_times(make(OffsetsAtTimesRequest,
                                            (body["timestamp_type"], queries))))
    topics = []
    for group in body["topics"]:
        partitions = []
        for entry, (code, offsets, timestamps) in zip(group["partitions"], each):
            partitions.append({"partition": entry["partition"], "error_code": code,
                               "offsets": offsets, "timestamps": timestamps})
        topics.append({"topic": group["topic"], "partitions": partitions})
    return {"topics": topics}


def _offsets_at_shared_times(admin, body: dict) -> dict:
    """OffsetsAtTimes v1: every partition asked the same times, answered with its offsets
    packed as int64 (``protocol.int_columns``), no times: neither side encodes or checks an
    int per (partition, time)."""
    times = body["timestamps"]
    queries = [(group["topic"], partition, times)
               for group in body["topics"] for partition in group["partitions"]]
    each = iter(admin.offsets_at_times(make(OffsetsAtTimesRequest,
                                            (body["timestamp_type"], queries))))
    topics = []
    for group in body["topics"]:
        partitions = []
        for partition, (code, offsets, _) in zip(group["partitions"], each):
            partitions.append({"partition": partition, "error_code": code,
                               "offsets": pack_int64(offsets)})
        topics.append({"topic": group["topic"], "partitions": partitions})
    return {"topics": topics}


def handle_alter_partition_reassignments(admin, body: dict):
    request = AlterReassignmentsRequest([
        Move(group["topic"], p["partition"], None if p["replicas"] is None
             else tuple(p["replicas"])) for group in body["topics"] for p in group["partitions"]])

    def finish(results) -> dict:
        if type(results) is RequestDenied:
            return _denied_body(results)
        return _answered(body, results, lambda asked, result: {
            "partition": asked["partition"], "error_code": result.error_code,
            "error_message": result.error_message})
    return _then(admin.alter_reassignments(request), finish)


def handle_list_partition_reassignments(admin, body: dict) -> dict:
    results = admin.list_reassignments(ListReassignmentsRequest(_named(body["topics"])))
    if type(results) is RequestDenied:
        return _denied_body(results)
    return _grouped(results, lambda r: {
        "partition": r.partition, "replicas": r.replicas, "adding_replicas": r.adding_replicas,
        "removing_replicas": r.removing_replicas, "leader": r.leader, "isr": r.isr,
        "log_end_offset": r.log_end_offset,
        "replica_log_end_offsets": [{"broker": broker, "log_end_offset": end}
                                    for broker, end in r.replica_log_end_offsets]})


def handle_elect_leaders(admin, body: dict):
    def finish(results) -> dict:
        if type(results) is RequestDenied:
            return _denied_body(results)
        return _grouped(results, lambda r: {"partition": r.partition,
                                            "error_code": r.error_code,
                                            "error_message": r.error_message})
    return _then(admin.elect_leaders(ElectLeadersRequest(_named(body["topics"]))), finish)
