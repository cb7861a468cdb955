"""tslog's Produce, Fetch, ListOffsets and Metadata: its frames' bodies translated, once,
into the data service's typed requests (``broker/data``), and its results back into the
response bodies.

Each handler takes ``(data, body)``: ``data`` is the broker's ``DataService``, or, with the
authorizer on, the connection's ``GatedData`` in front of it (``security/request_gate.py``),
which has the same methods. It returns the response body, an awaitable of it, or None
for Produce with acks = 0. The Kafka port's adapters (``kafka/data_apis.py``) call the same
service, so the two front doors differ only in their translation.
"""

from __future__ import annotations

from tslog.protocol.packed import PackedAnswer, packed_array, spliced
from tslog.protocol.packing import pack

from ..data.pending import Pending
from ..data.requests import (
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
    RequestDenied,
    make,
)


def _denied_body(denied: RequestDenied) -> dict:
    return {"error_code": denied.error_code, "error_message": denied.error_message}


# The handlers below build lists with loops rather than comprehensions, tell a result from
# an awaitable by its type (the service returns a list when it answers at once), and make
# each partition's entry a plain tuple of its type's fields (``requests.py``): all three are
# work every request would otherwise pay (a comprehension is a function call, and building
# a tuple subclass costs several plain tuples).


async def _answer_later(build, body: dict, results) -> dict:
    """``build(body, results)`` once the service's awaitable of the results is done."""
    return build(body, await results)


# ------------------------------------------------------------------------------------ produce


def handle_produce(data, body: dict):
    partitions = []
    for group in body["topics"]:
        topic = group["topic"]
        for entry in group["partitions"]:
            partitions.append((topic, entry["partition"], entry["records"]))
    results = data.produce(make(ProduceRequest, (body["acks"], body["timeout_ms"], partitions)))
    if results is None:  # acks = 0
        return None
    if type(results) is list:
        return _produce_body(body, results)
    if type(results) is Pending:  # acks = -1 on a single broker: no task (``pending.py``)
        return results.then(lambda settled: _produce_body(body, settled))
    return _answer_later(_produce_body, body, results)


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
    partitions = []
    for group in body["topics"]:
        topic = group["topic"]
        for entry in group["partitions"]:
            partitions.append((topic, entry["partition"], entry["fetch_offset"],
                               entry["max_bytes"]))
    results = data.fetch(make(FetchRequest, (body["replica_id"], body["max_wait_ms"],
                                             body["min_bytes"], body["max_bytes"], partitions)))
    if type(results) is list:
        return _fetch_body(body, results)
    if type(results) is RequestDenied:
        return _denied_body(results)
    return _answer_later(_fetch_body, body, results)


def _fetch_body(body: dict, results: list) -> dict:
    each = iter(results)
    topics = []
    for group in body["topics"]:
        out = []
        for entry in group["partitions"]:
            code, high_watermark, log_start_offset, records = next(each)
            out.append({"partition": entry["partition"], "error_code": code,
                        "high_watermark": high_watermark,
                        "log_start_offset": log_start_offset, "records": records})
        topics.append({"topic": group["topic"], "partitions": out})
    return {"topics": topics}


# ------------------------------------------------------------------------------- list offsets


def handle_list_offsets(data, body: dict):
    queries = []
    for group in body["topics"]:
        topic = group["topic"]
        for entry in group["partitions"]:
            queries.append((topic, entry["partition"], entry["timestamp"]))
    results = data.list_offsets(make(ListOffsetsRequest, (
        body["replica_id"], body["timestamp_type"], queries)))
    if type(results) is list:
        return _list_offsets_body(body, results)
    return _answer_later(_list_offsets_body, body, results)


def _list_offsets_body(body: dict, results: list) -> dict:
    each = iter(results)
    topics = []
    for group in body["topics"]:
        out = []
        for entry in group["partitions"]:
            code, offset, timestamp, _ = next(each)
            out.append({"partition": entry["partition"], "error_code": code,
                        "offset": offset, "timestamp": timestamp})
        topics.append({"topic": group["topic"], "partitions": out})
    return {"topics": topics}


# ----------------------------------------------------------------------------------- metadata


def _partitions(entries) -> tuple[list[dict], bytes]:
    """A kept partition list in tslog's shape and its msgpack bytes: made once per list
    (``KeptPartitions``), then spliced into every answer that carries it."""
    partitions = [{"partition": partition, "error_code": code, "leader": leader,
                   "leader_epoch": epoch, "replicas": replicas, "isr": isr}
                  for partition, code, leader, epoch, replicas, isr in entries]
    return partitions, pack(partitions)


def handle_metadata(data, body: dict) -> PackedAnswer:
    """Every topic asked for (all of them for ``topics: None``) with its partitions' leaders
    and ISR, and the brokers' addresses on this port.

    The answer comes packed (``protocol/packed.py``): each topic's kept partition list is
    spliced in as the bytes packed when the list was built, so a request packs a few small
    maps per topic and none per partition."""
    found = data.metadata(MetadataRequest(body["topics"]))
    brokers = [{"node_id": node, "host": host, "port": port}
               for node, (host, port) in sorted(found.cluster.brokers().items())]
    topics, packed = [], []
    for topic, code, kept in found.topics:
        entry = {"topic": topic, "error_code": code, "partitions": []}
        if kept is None:
            packed.append(pack(entry))
        else:
            partitions, partitions_packed = kept.encoded(_partitions)
            packed.append(spliced(entry, "partitions", partitions_packed))
            entry["partitions"] = partitions
        topics.append(entry)
    answer = {"brokers": brokers, "controller_id": found.controller_id, "topics": []}
    answer_packed = spliced(answer, "topics", packed_array(packed))
    answer["topics"] = topics
    return PackedAnswer(answer, answer_packed)
