"""Kafka's consumer-group APIs on the Kafka listener: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch.

Each is ``adapter(services, body, version, info) -> dict | Awaitable[dict]``: ``body`` is the
Kafka request body as ``tslog.protocol.kafka`` decodes it (snake_case dicts), the answer is the
Kafka response body for the same version, and ``info`` is the request's
``KafkaRequestInfo`` (``client_id``, ``client_host``, ``principal``; duck-typed here).

- Every one of them is the group service's (``groups/api.py``), the one tslog's own group
  requests call: the adapter makes its typed request (``groups/requests.py``) of the Kafka
  body once and writes Kafka's answer from the typed result. The classic group protocol runs
  in ``ClassicGroupService`` behind it; OffsetCommit and OffsetFetch read and write
  ``CommittedOffsets``, the same store tslog's own consumers use, so a group's offsets are
  one set whichever protocol its consumers speak. The service applies Kafka's rules where
  its clients need them (``classic``): a commit to a group id without tslog members is
  fenced by the classic group's rules, and a fetch checks the group id and the placement.
- Placement as for tslog's groups: the controller coordinates (a single broker is its own);
  FindCoordinator names it by its Kafka address (``kafka_address``), other brokers answer the
  group APIs with NOT_COORDINATOR.
- ACLs: ``services.group_api`` is, with the authorizer on, the connection's ``GatedGroups``
  (``security/group_gate.py``), the gate tslog's own requests pass, which judges the typed
  request by Kafka's mapping and counts a denial once: Describe on the group for
  FindCoordinator and OffsetFetch (and Describe on each topic for OffsetFetch; asked for all
  topics, those the principal may not describe are left out), Read on the group for
  JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit (and Read on each topic for
  OffsetCommit). A denied group answers GROUP_AUTHORIZATION_FAILED before any coordinator is
  asked, so it changes nothing; no adapter checks an ACL itself.

Every user error is an error code in the answer; nothing here raises on a well-typed body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tslog.protocol.errors import ErrorCode

from ...groups.requests import (
    GROUP_KEY_TYPE,
    Coordinator,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    make,
)
from ...security.group_gate import GatedGroups


@dataclass(frozen=True, slots=True)
class KafkaGroupServices:
    """What the Kafka group adapters use, and nothing else (``KafkaServices`` has both).

    ``kafka_address`` maps a node id to that broker's Kafka listener (None: unknown)."""

    kafka_address: Callable[[int], tuple[str, int] | None]
    group_api: Any  # the group service (``GroupApi``), or a connection's ``GatedGroups``


def kafka_group_services(broker, kafka_address: Callable[[int], tuple[str, int] | None],
                         connection=None) -> KafkaGroupServices:
    """The holder for ``broker`` (a ``state.Broker``); the caller supplies where each node's
    Kafka listener is, and, with the authorizer on, the connection (its ``principal`` and
    ``peer``) the group service is judged for, as the listener's ``make_services`` does."""
    if broker.gate is None:
        return KafkaGroupServices(kafka_address, broker.group_api)
    if connection is None:
        raise ValueError("with the authorizer on, the group service is a connection's")
    return KafkaGroupServices(kafka_address,
                              broker.gate.wrap(GatedGroups, broker.group_api, connection))


# -- FindCoordinator ------------------------------------------------------------------------


def find_coordinator(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    """The group service's answer (``groups/api.py``, through the connection's gate), each
    node named by its Kafka listener's address."""
    keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
    found = services.group_api.find_coordinator(
        FindCoordinatorRequest(keys, body.get("key_type", GROUP_KEY_TYPE)))
    results = [_coordinator(services, key, each)
               for key, each in zip(keys, found.coordinators)]
    if version >= 4:
        return {"coordinators": results}
    only = results[0]
    return {"error_code": only["error_code"], "error_message": only["error_message"],
            "node_id": only["node_id"], "host": only["host"], "port": only["port"]}


def _coordinator(services: KafkaGroupServices, key: str, found: Coordinator) -> dict:
    answer = {"key": key, "node_id": -1, "host": "", "port": -1,
              "error_code": found.error_code, "error_message": None}
    if found.error_code == ErrorCode.INVALID_REQUEST:
        answer["error_message"] = "only group coordinators (key type 0): no transactions here"
    elif not found.error_code:
        address = services.kafka_address(found.node_id) if found.node_id >= 0 else None
        if address is None:
            answer["error_code"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        else:
            answer["node_id"], (answer["host"], answer["port"]) = found.node_id, address
    if answer["error_code"]:
        answer["error_message"] = answer["error_message"] or ErrorCode(
            answer["error_code"]).message
    return answer


# -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup --------------------------------------------


async def join_group(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    session_ms = body["session_timeout_ms"]
    rebalance_ms = body.get("rebalance_timeout_ms", -1) if version >= 1 else -1
    answer = await services.group_api.join_group(JoinGroupRequest(
        body["group_id"], body["member_id"], info.client_id or "", session_ms,
        session_ms if rebalance_ms < 0 else rebalance_ms, body["protocol_type"],
        [(p["name"], p["metadata"]) for p in body["protocols"]], version >= 4,
        body.get("group_instance_id") if version >= 5 else None, info.client_host))
    if answer.error:
        return _join_error(answer.error, answer.member_id, version)
    return {"error_code": 0, "generation_id": answer.generation_id,
            "protocol_type": answer.protocol_type, "protocol_name": answer.protocol_name,
            "leader": answer.leader, "member_id": answer.member_id,
            "members": [{"member_id": m, "group_instance_id": None, "metadata": data}
                        for m, data in answer.members]}


def _join_error(code: int, member_id: str, version: int) -> dict:
    return {"error_code": int(code), "generation_id": -1, "protocol_type": None,
            "protocol_name": None if version >= 7 else "", "leader": "",
            "member_id": member_id, "members": []}


async def sync_group(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    assignments = {entry["member_id"]: entry["assignment"] for entry in body["assignments"]}
    answer = await services.group_api.sync_group(SyncGroupRequest(
        body["group_id"], body["generation_id"], body["member_id"], body.get("protocol_type"),
        body.get("protocol_name"), assignments))
    return {"error_code": int(answer.error), "protocol_type": answer.protocol_type,
            "protocol_name": answer.protocol_name, "assignment": answer.assignment}


def heartbeat(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    return {"error_code": services.group_api.heartbeat(HeartbeatRequest(
        body["group_id"], body["generation_id"], body["member_id"]))}


def leave_group(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    members = ([entry["member_id"] for entry in body["members"]] if version >= 3
               else [body["member_id"]])
    left = services.group_api.leave_group(LeaveGroupRequest(body["group_id"], members))
    if left.error_code:
        return {"error_code": left.error_code, "members": []}
    if version < 3:
        return {"error_code": left.codes[0]}
    return {"error_code": 0, "members": [
        {"member_id": entry["member_id"], "group_instance_id": entry.get("group_instance_id"),
         "error_code": each} for entry, each in zip(body["members"], left.codes)]}


# -- OffsetCommit, OffsetFetch --------------------------------------------------------------


def offset_commit(services: KafkaGroupServices, body: dict, version: int, info):
    """The group service's commit (``groups/offsets_api.py``) by Kafka's rules (``classic``):
    offsets of every partition that passes the checks are stored together, once the group's
    coordinator accepts the committer; the answer waits for the fsync."""
    partitions = []  # ``CommitPartition``'s fields, as plain tuples (``groups/requests.py``)
    for topic in body["topics"]:
        name = topic["name"]
        for entry in topic["partitions"]:
            partitions.append((name, entry["partition_index"], entry["committed_offset"],
                               entry["committed_metadata"] or ""))
    generation = body.get("generation_id_or_member_epoch", -1) if version >= 1 else -1
    member_id = body.get("member_id", "") if version >= 1 else ""
    codes = services.group_api.offset_commit(make(OffsetCommitRequest, (
        body["group_id"], member_id, generation, partitions, True)))
    if type(codes) is list:
        return _committed(body, codes)
    return _committed_later(body, codes)


async def _committed_later(body: dict, codes) -> dict:
    return _committed(body, await codes)


def _committed(body: dict, codes: list[int]) -> dict:
    each = iter(codes)
    return {"topics": [{"name": topic["name"], "partitions": [
        {"partition_index": entry["partition_index"], "error_code": next(each)}
        for entry in topic["partitions"]]} for topic in body["topics"]]}


def offset_fetch(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    if version >= 8:
        return {"groups": [_fetch_group(services, group["group_id"], group["topics"])
                           for group in body["groups"]]}
    answer = _fetch_group(services, body["group_id"], body["topics"])
    if version < 2 and answer["error_code"]:  # no group-level code before v2: per partition
        for topic in answer["topics"]:
            for partition in topic["partitions"]:
                partition["error_code"] = answer["error_code"]
    return {"topics": answer["topics"], "error_code": answer["error_code"]}


def _fetch_group(services: KafkaGroupServices, group_id: str, requested) -> dict:
    """One group's answer from the group service's fetch (Kafka's rules, ``classic``): a
    refused group lists the partitions asked with no offset and the group's error code."""
    fetched = services.group_api.offset_fetch(make(OffsetFetchRequest, (
        group_id, None if requested is None else [
            (topic["name"], p) for topic in requested for p in topic["partition_indexes"]],
        True)))
    if fetched.error_code:
        topics = [{"name": t["name"], "partitions": [_fetched(p, -1, "", 0)
                                                      for p in t["partition_indexes"]]}
                  for t in requested or ()]
        return {"group_id": group_id, "topics": topics, "error_code": fetched.error_code}
    if requested is None:  # every committed offset, sorted: one entry per topic
        requested = []
        for topic, partition, *_ in fetched.partitions:
            if not requested or requested[-1]["name"] != topic:
                requested.append({"name": topic, "partition_indexes": []})
            requested[-1]["partition_indexes"].append(partition)
    each = iter(fetched.partitions)
    topics = [{"name": topic["name"], "partitions": [
        _fetched(*next(each)[1:]) for _ in topic["partition_indexes"]]} for topic in requested]
    return {"group_id": group_id, "topics": topics, "error_code": 0}


def _fetched(partition: int, offset: int, metadata: str, code: int) -> dict:
    return {"partition_index": partition, "committed_offset": offset,
            "committed_leader_epoch": -1, "metadata": metadata, "error_code": int(code)}


# api key -> adapter, for the Kafka listener's dispatch table.
GROUP_ADAPTERS: dict[int, Callable] = {
    8: offset_commit,
    9: offset_fetch,
    10: find_coordinator,
    11: join_group,
    12: heartbeat,
    13: leave_group,
    14: sync_group,
}
