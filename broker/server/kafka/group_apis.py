"""Kafka's consumer-group APIs on the Kafka listener: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch.

Each is ``adapter(services, body, version, info) -> dict | Awaitable[dict]``: ``body`` is the
Kafka request body as ``tslog.protocol.kafka`` decodes it (snake_case dicts), the answer is the
Kafka response body for the same version, and ``info`` is the request's
``KafkaRequestInfo`` (``client_id``, ``client_host``, ``principal``; duck-typed here).

- The classic group protocol runs in ``ClassicGroupService``; OffsetCommit and OffsetFetch read
  and write ``CommittedOffsets``, the same store tslog's own consumers use, so a group's offsets
  are one set whichever protocol its consumers speak.
- Placement as for tslog's groups: the controller coordinates (a single broker is its own);
  FindCoordinator names it by its Kafka address (``kafka_address``), other brokers answer the
  group APIs with NOT_COORDINATOR.
- FindCoordinator is the group service's (``groups/api.py``), the one tslog's own
  FindCoordinator calls: ``services.group_api`` is, with the authorizer on, the connection's
  ``GatedGroups`` (``security/group_gate.py``), which judges the typed request (Describe on
  each group) and counts a denial, for both ports alike.
- ACLs of the others, with ``info.principal`` from the request's host: the group's by the
  gate's one check (``request_gate.may_use_group``, Kafka's mapping of each API to an
  operation, the table the native port's requests pass too): Describe for OffsetFetch, Read for
  JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit; then Describe on each topic
  for OffsetFetch (with "all topics" the others are left out) and Read on each topic for
  OffsetCommit. A denied group answers GROUP_AUTHORIZATION_FAILED before any service is
  called, so it changes nothing. The bodies are Kafka's (other shapes and versions than
  tslog's), so the adapter calls the check where its body names the group. With the
  authorizer off, ``authorizer`` is None and nothing is checked.

Every user error is an error code in the answer; nothing here raises on a well-typed body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tslog.protocol.errors import ErrorCode

from ...groups.classic_service import ClassicGroupService
from ...groups.committed_offsets import CommittedOffsets
from ...groups.offset_files import MAX_METADATA_BYTES, group_id_problem
from ...groups.requests import GROUP_KEY_TYPE, Coordinator, FindCoordinatorRequest
from ...groups.service import GroupService
from ...security.acl import Authorizer
from ...security.group_gate import GatedGroups
from ...security.request_gate import HostAuthorizer, may_use_group
from ...topics import TopicManager
from ...cluster.view import ClusterView
from ..group_handlers import coordinator_problem
from ..handlers import commit_durably


@dataclass(frozen=True, slots=True)
class KafkaGroupServices:
    """What the Kafka group adapters use, and nothing else.

    ``groups`` is tslog's own coordinator: its place (``coordinator_problem``) is the classic
    groups' too, and a commit to a group id whose members are tslog's is fenced by it.
    ``kafka_address`` maps a node id to that broker's Kafka listener (None: unknown)."""

    topics: TopicManager
    offsets: CommittedOffsets
    groups: GroupService
    classic: ClassicGroupService
    cluster: ClusterView
    authorizer: Authorizer | None
    kafka_address: Callable[[int], tuple[str, int] | None]
    group_api: Any  # the group service (``GroupApi``), or a connection's ``GatedGroups``


def kafka_group_services(broker, kafka_address: Callable[[int], tuple[str, int] | None],
                         connection=None) -> KafkaGroupServices:
    """The holder for ``broker`` (a ``state.Broker``); the caller supplies where each node's
    Kafka listener is, and, with the authorizer on, the connection (its ``principal`` and
    ``peer``) the group service is judged for, as the listener's ``make_services`` does."""
    if broker.gate is None:
        group_api = broker.group_api
    elif connection is None:
        raise ValueError("with the authorizer on, the group service is a connection's")
    else:
        group_api = broker.gate.wrap(GatedGroups, broker.group_api, connection)
    return KafkaGroupServices(broker.topics, broker.offsets, broker.groups,
                              broker.classic_groups, broker.cluster,
                              None if broker.gate is None else broker.gate.authorizer,
                              kafka_address, group_api)


def group_allowed(services, info, api_key: int, group_id: str) -> bool:
    """The gate's group check (``request_gate.may_use_group``) for a Kafka request."""
    authorizer = services.authorizer
    return authorizer is None or may_use_group(HostAuthorizer(authorizer, info.client_host),
                                               info.principal, api_key, group_id)


def topic_allowed(services, info, operation: str, topic: str) -> bool:
    authorizer = services.authorizer
    return authorizer is None or authorizer.authorize(info.principal, operation, "topic",
                                                      topic, info.client_host)


def _group_problem(services: KafkaGroupServices, info, api_key: int, group_id: str) -> int:
    """The group-level refusal of a request (0: none): a bad id, the ACL, the placement."""
    if group_id_problem(group_id) is not None:
        return ErrorCode.INVALID_GROUP_ID
    if not group_allowed(services, info, api_key, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return coordinator_problem(services)


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
    group_id, member_id = body["group_id"], body["member_id"]
    code = _group_problem(services, info, 11, group_id)
    if code:
        return _join_error(code, member_id, version)
    session_ms = body["session_timeout_ms"]
    rebalance_ms = body.get("rebalance_timeout_ms", -1) if version >= 1 else -1
    answer = await services.classic.join(
        group_id, member_id, info.client_id or "", session_ms,
        session_ms if rebalance_ms < 0 else rebalance_ms, body["protocol_type"],
        [(p["name"], p["metadata"]) for p in body["protocols"]], version >= 4,
        body.get("group_instance_id") if version >= 5 else None, info.client_host)
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
    group_id = body["group_id"]
    code = _group_problem(services, info, 14, group_id)
    if code:
        return {"error_code": int(code), "assignment": b""}
    assignments = {entry["member_id"]: entry["assignment"] for entry in body["assignments"]}
    answer = await services.classic.sync(group_id, body["generation_id"], body["member_id"],
                                         body.get("protocol_type"), body.get("protocol_name"),
                                         assignments)
    return {"error_code": int(answer.error), "protocol_type": answer.protocol_type,
            "protocol_name": answer.protocol_name, "assignment": answer.assignment}


def heartbeat(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    group_id = body["group_id"]
    code = _group_problem(services, info, 12, group_id)
    if not code:
        code = services.classic.heartbeat(group_id, body["generation_id"], body["member_id"])
    return {"error_code": int(code)}


def leave_group(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    group_id = body["group_id"]
    members = ([entry["member_id"] for entry in body["members"]] if version >= 3
               else [body["member_id"]])
    code = _group_problem(services, info, 13, group_id)
    if code:
        return {"error_code": int(code), "members": []}
    codes = services.classic.leave(group_id, members)
    if version < 3:
        return {"error_code": int(codes[0])}
    return {"error_code": 0, "members": [
        {"member_id": entry["member_id"], "group_instance_id": entry.get("group_instance_id"),
         "error_code": int(each)} for entry, each in zip(body["members"], codes)]}


# -- OffsetCommit, OffsetFetch --------------------------------------------------------------


def offset_commit(services: KafkaGroupServices, body: dict, version: int, info):
    """Offsets of every partition that passes the topic checks are stored together, once the
    group's coordinator accepts the committer (``_fence``); the answer waits for the fsync."""
    group_id = body["group_id"]
    refused = _group_problem(services, info, 8, group_id) or _fence(services, body, version)
    offsets = {}
    topics_out = []
    for topic in body["topics"]:
        name = topic["name"]
        topic_code = refused
        if not topic_code and not topic_allowed(services, info, "Read", name):
            topic_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        parts_out = []
        for entry in topic["partitions"]:
            code = topic_code or _commit_code(services, name, entry)
            if not code:
                offsets[name, entry["partition_index"]] = (entry["committed_offset"],
                                                           entry["committed_metadata"] or "")
            parts_out.append({"partition_index": entry["partition_index"],
                              "error_code": int(code)})
        topics_out.append({"name": name, "partitions": parts_out})
    response = {"topics": topics_out}
    if not offsets:
        return response
    return commit_durably(services, group_id, offsets, response)


def _fence(services: KafkaGroupServices, body: dict, version: int) -> int:
    """Who may commit: a group id whose members are tslog's is fenced by tslog's coordinator
    (the generation field then carries the member epoch, as in Kafka 4); any other by the
    classic group's rules (generation -1 and member "" commit outside group management)."""
    generation = body.get("generation_id_or_member_epoch", -1) if version >= 1 else -1
    member_id = body.get("member_id", "") if version >= 1 else ""
    group_id = body["group_id"]
    coordinator = services.groups.coordinator
    if coordinator is not None and coordinator.describe(group_id).members:
        return coordinator.validate_commit(group_id, member_id, generation)
    return services.classic.validate_commit(group_id, generation, member_id)


def _commit_code(services: KafkaGroupServices, topic: str, entry: dict) -> int:
    known = services.topics.topics.get(topic)
    if known is None or not 0 <= entry["partition_index"] < known.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if entry["committed_offset"] < -1:
        return ErrorCode.INVALID_REQUEST
    metadata = entry["committed_metadata"] or ""
    if len(metadata.encode()) > MAX_METADATA_BYTES:
        return ErrorCode.OFFSET_METADATA_TOO_LARGE
    return 0


def offset_fetch(services: KafkaGroupServices, body: dict, version: int, info) -> dict:
    if version >= 8:
        return {"groups": [_fetch_group(services, info, group["group_id"], group["topics"])
                           for group in body["groups"]]}
    answer = _fetch_group(services, info, body["group_id"], body["topics"])
    if version < 2 and answer["error_code"]:  # no group-level code before v2: per partition
        for topic in answer["topics"]:
            for partition in topic["partitions"]:
                partition["error_code"] = answer["error_code"]
    return {"topics": answer["topics"], "error_code": answer["error_code"]}


def _fetch_group(services: KafkaGroupServices, info, group_id: str, requested) -> dict:
    code = _group_problem(services, info, 9, group_id)
    if code:
        topics = [{"name": t["name"], "partitions": [_fetched(p, -1, "", 0)
                                                      for p in t["partition_indexes"]]}
                  for t in requested or ()]
        return {"group_id": group_id, "topics": topics, "error_code": int(code)}
    committed = services.offsets.fetch(group_id)
    if requested is None:  # every committed offset, of the topics the principal may see
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(committed):
            by_topic.setdefault(topic, []).append(partition)
        requested = [{"name": name, "partition_indexes": parts}
                     for name, parts in by_topic.items()
                     if topic_allowed(services, info, "Describe", name)]
    topics = []
    for topic in requested:
        name = topic["name"]
        if not topic_allowed(services, info, "Describe", name):
            partitions = [_fetched(p, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                          for p in topic["partition_indexes"]]
        else:
            partitions = [_fetched(p, *committed.get((name, p), (-1, "")), 0)
                          for p in topic["partition_indexes"]]
        topics.append({"name": name, "partitions": partitions})
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
