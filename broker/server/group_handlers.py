"""Handlers of the consumer-group APIs (KIP-848's protocol): FindCoordinator,
ConsumerGroupHeartbeat, ConsumerGroupDescribe, ListGroups, DeleteGroups.

Each turns a request body into ``GroupService`` calls and the answer back into a body; the
rules (epochs, assignment, fencing, expiry) live in ``broker.groups``.

Placement: every group's coordinator is the cluster's controller (a single broker is its own
controller). FindCoordinator names it, on any broker; the other group APIs, and OffsetCommit
(``handlers.py``), are answered by it only: another broker answers NOT_COORDINATOR, so the
client asks FindCoordinator again, and the controller itself answers
COORDINATOR_NOT_AVAILABLE while it is still loading the groups' state (``coordinator_problem``).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from ..group_offsets import group_id_problem
from ..groups import GroupDescription, MemberDescription
from .services import GroupApis


def _by_topic(partitions) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        topics.setdefault(topic, []).append(partition)
    return [{"topic": topic, "partitions": parts} for topic, parts in topics.items()]


def _pairs(groups) -> list[tuple[str, int]] | None:
    if groups is None:
        return None
    return [(group["topic"], partition) for group in groups for partition in group["partitions"]]


def coordinator_problem(services: GroupApis) -> ErrorCode:
    """NONE if this broker coordinates the groups now; NOT_COORDINATOR if another broker is
    the controller (or none is); COORDINATOR_NOT_AVAILABLE while ours is still loading."""
    if services.cluster.controller_id() != services.cluster.node_id:
        return ErrorCode.NOT_COORDINATOR
    if not services.groups.active:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


def refused_commit(body: dict, code: ErrorCode) -> dict:
    """An OffsetCommit answer carrying ``code`` on every partition: nothing was stored."""
    return {"topics": [{"topic": group["topic"], "partitions": [
        {"partition": entry["partition"], "error_code": int(code)}
        for entry in group["partitions"]]} for group in body["topics"]]}


def handle_find_coordinator(services: GroupApis, body: dict) -> dict:
    controller = services.cluster.controller_id()
    address = services.cluster.brokers().get(controller)
    if address is None:  # no controller elected (or not registered yet): ask again soon
        controller, (host, port) = -1, ("", 0)
    else:
        host, port = address
    return {"coordinators": [
        {"key": key, "node_id": controller, "host": host, "port": port,
         "error_code": (ErrorCode.INVALID_GROUP_ID if group_id_problem(key)
                        else 0 if address is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE)}
        for key in body["keys"]]}


async def handle_consumer_group_heartbeat(services: GroupApis, body: dict) -> dict:
    group_id = body["group_id"]
    code = (ErrorCode.INVALID_GROUP_ID if group_id_problem(group_id)
            else coordinator_problem(services))
    if code:
        return {"error_code": int(code), "member_id": body["member_id"],
                "member_epoch": body["member_epoch"], "heartbeat_interval_ms": 0,
                "assignment": None}
    answer = await services.groups.heartbeat(group_id, body["member_id"], body["member_epoch"],
                                             body["subscribed_topics"], _pairs(body["owned"]))
    return {"error_code": int(answer.error), "member_id": answer.member_id,
            "member_epoch": answer.member_epoch,
            "heartbeat_interval_ms": answer.heartbeat_interval_ms,
            "assignment": None if answer.assignment is None else _by_topic(answer.assignment)}


def _member(member: MemberDescription) -> dict:
    return {"member_id": member.member_id, "member_epoch": member.member_epoch,
            "state": member.state.name, "subscribed_topics": sorted(member.subscribed_topics),
            "assigned": _by_topic(member.assigned), "revoking": _by_topic(member.revoking),
            "target": _by_topic(member.target)}


def _group(group: GroupDescription) -> dict:
    return {"group_id": group.group_id, "error_code": int(group.error),
            "state": group.state.name, "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch, "assignor": group.assignor,
            "members": [_member(member) for member in group.members]}


def _unserved(group_id: str, code: ErrorCode) -> dict:
    return {"group_id": group_id, "error_code": int(code), "state": "DEAD", "group_epoch": -1,
            "assignment_epoch": -1, "assignor": "", "members": []}


def handle_consumer_group_describe(services: GroupApis, body: dict) -> dict:
    code = coordinator_problem(services)
    if code:
        return {"groups": [_unserved(group_id, code) for group_id in body["groups"]]}
    return {"groups": [_group(services.groups.coordinator.describe(group_id))
                       for group_id in body["groups"]]}


def handle_list_groups(services: GroupApis, body: dict) -> dict:
    code = coordinator_problem(services)
    if code:
        return {"error_code": int(code), "groups": []}
    states = None if body["states"] is None else {state.upper() for state in body["states"]}
    return {"error_code": 0, "groups": [
        {"group_id": listing.group_id, "state": listing.state.name,
         "members": listing.member_count}
        for listing in services.groups.coordinator.list_groups()
        if states is None or listing.state.name in states]}


async def handle_delete_groups(services: GroupApis, body: dict) -> dict:
    code = coordinator_problem(services)
    if code:
        return {"results": [{"group_id": group_id, "error_code": int(code)}
                            for group_id in body["groups"]]}
    results = []
    for group_id in body["groups"]:
        code = await services.groups.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": int(code)})
    return {"results": results}
