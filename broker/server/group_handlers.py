"""Handlers of the consumer-group APIs (KIP-848's protocol): FindCoordinator,
ConsumerGroupHeartbeat, ConsumerGroupDescribe, ListGroups, DeleteGroups.

Each turns a request body into ``GroupService`` calls and the answer back into a body; the
rules (epochs, assignment, fencing, expiry) live in ``broker.groups``.
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


def handle_find_coordinator(services: GroupApis, body: dict) -> dict:
    host, port = services.cluster.brokers()[services.cluster.node_id]
    return {"coordinators": [
        {"key": key, "node_id": services.cluster.node_id, "host": host, "port": port,
         "error_code": ErrorCode.INVALID_GROUP_ID if group_id_problem(key) else 0}
        for key in body["keys"]]}


async def handle_consumer_group_heartbeat(services: GroupApis, body: dict) -> dict:
    group_id = body["group_id"]
    if group_id_problem(group_id):
        return {"error_code": ErrorCode.INVALID_GROUP_ID, "member_id": body["member_id"],
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


def handle_consumer_group_describe(services: GroupApis, body: dict) -> dict:
    return {"groups": [_group(services.groups.coordinator.describe(group_id))
                       for group_id in body["groups"]]}


def handle_list_groups(services: GroupApis, body: dict) -> dict:
    states = None if body["states"] is None else {state.upper() for state in body["states"]}
    return {"groups": [
        {"group_id": listing.group_id, "state": listing.state.name,
         "members": listing.member_count}
        for listing in services.groups.coordinator.list_groups()
        if states is None or listing.state.name in states]}


async def handle_delete_groups(services: GroupApis, body: dict) -> dict:
    results = []
    for group_id in body["groups"]:
        code = await services.groups.delete_group(group_id)
        results.append({"group_id": group_id, "error_code": int(code)})
    return {"results": results}
