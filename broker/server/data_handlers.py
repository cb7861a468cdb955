"""tslog's Produce, Fetch and ListOffsets: its frames' bodies translated, once, into the data
service's typed requests (``broker/data``), and its results back into the response bodies.

Each handler takes ``(data, body)``: ``data`` is the broker's ``DataService``, or, with the
authorizer on, the connection's ``GatedData`` in front of it (``security/request_gate.py``),
which has the same three methods. It returns the response body, an awaitable of it, or None
for Produce with acks = 0. The Kafka port's adapters (``kafka/data_apis.py``) call the same
service, so the two front doors differ only in their translation.
"""

from __future__ import annotations

import inspect

from ..data.requests import (
    FetchPartition,
    FetchRequest,
    ListOffsetsRequest,
    OffsetQuery,
    ProducePartition,
    ProduceRequest,
    RequestDenied,
    make,
)


def answer(result, respond):
    """``respond(result)`` now, or once the service's awaitable of it is done."""
    if inspect.isawaitable(result):
        async def later():
            return respond(await result)
        return later()
    return respond(result)


def _denied_body(denied: RequestDenied) -> dict:
    return {"error_code": denied.error_code, "error_message": denied.error_message}


# ------------------------------------------------------------------------------------ produce


def handle_produce(data, body: dict):
    request = ProduceRequest(body["acks"], body["timeout_ms"], [
        make(ProducePartition, (group["topic"], entry["partition"], entry["records"]))
        for group in body["topics"] for entry in group["partitions"]])
    result = data.produce(request)
    if result is None:  # acks = 0
        return None
    return answer(result, lambda results: _produce_body(body, results))


def _produce_body(body: dict, results) -> dict:
    each = iter(results)
    topics = []
    for group in body["topics"]:
        out = []
        for entry in group["partitions"]:
            result = next(each)
            partition = {"partition": entry["partition"], "error_code": result.error_code,
                         "base_offset": result.base_offset,
                         "log_append_time": result.log_append_time,
                         "log_start_offset": result.log_start_offset}
            if result.error_message is not None:
                partition["error_message"] = result.error_message
            out.append(partition)
        topics.append({"topic": group["topic"], "partitions": out})
    return {"topics": topics}


# -------------------------------------------------------------------------------------- fetch


def handle_fetch(data, body: dict):
    request = FetchRequest(body["replica_id"], body["max_wait_ms"], body["min_bytes"],
                           body["max_bytes"], [
        make(FetchPartition, (group["topic"], entry["partition"], entry["fetch_offset"],
                              entry["max_bytes"]))
        for group in body["topics"] for entry in group["partitions"]])
    return answer(data.fetch(request), lambda results: _fetch_body(body, results))


def _fetch_body(body: dict, results) -> dict:
    if type(results) is RequestDenied:
        return _denied_body(results)
    each = iter(results)
    return {"topics": [{"topic": group["topic"], "partitions": [
        _fetched(entry["partition"], next(each)) for entry in group["partitions"]]}
        for group in body["topics"]]}


def _fetched(partition: int, result) -> dict:
    code, high_watermark, log_start_offset, records = result
    return {"partition": partition, "error_code": code, "high_watermark": high_watermark,
            "log_start_offset": log_start_offset, "records": records}


# ------------------------------------------------------------------------------- list offsets


def handle_list_offsets(data, body: dict) -> dict:
    request = ListOffsetsRequest(body["replica_id"], body["timestamp_type"], [
        make(OffsetQuery, (group["topic"], entry["partition"], entry["timestamp"]))
        for group in body["topics"] for entry in group["partitions"]])
    each = iter(data.list_offsets(request))
    return {"topics": [{"topic": group["topic"], "partitions": [
        {"partition": entry["partition"], "error_code": found[0], "offset": found[1],
         "timestamp": found[2]}
        for entry, found in zip(group["partitions"], each)]}
        for group in body["topics"]]}
