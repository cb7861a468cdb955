"""Handlers of the consumer-group APIs (KIP-848's protocol): FindCoordinator,
ConsumerGroupHeartbeat, ConsumerGroupDescribe, ListGroups, DeleteGroups.

Each turns a request body into ``GroupService`` calls and the answer back into a body; the
rules (epochs, assignment, fencing, expiry) live in ``broker.groups``.

ListGroups and ConsumerGroupDescribe read one view of every group (``groups.catalog``),
whichever protocol its members speak, so they agree: a group exists if either coordinator
knows it *or* it has committed offsets (as in Kafka): a group whose clients only ever
committed (``assign()`` and commit, no membership) is listed and described as ``Empty`` with
no members, and DeleteGroups deletes it; deleting any group deletes its committed offsets
too, so a group made again under the name starts afresh. A Kafka client's classic group is
described in the same shape (its members' hosts and client ids beside the KIP-848 members').

Placement: every group's coordinator is the cluster's controller (a single broker is its own
controller). FindCoordinator names it, on any broker; the other group APIs, and OffsetCommit
(``handlers.py``), are answered by it only: another broker answers NOT_COORDINATOR, so the
client asks FindCoordinator again, and the controller itself answers
COORDINATOR_NOT_AVAILABLE while it is still loading the groups' state (``coordinator_problem``).
"""

from __future__ import annotations

import logging

from tslog.protocol.errors import ErrorCode

from ..groups.offset_files import group_id_problem
from ..groups.catalog import CLASSIC, MemberView
from ..groups.consumer_protocol import by_topic
from ..metrics.observe import forget_group
from .services import GroupApis

log = logging.getLogger("tslog.broker.groups")


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
    # "client": (client id, host), put in by the connection from the request's header and
    # its peer address (the wire's body has no such field).
    answer = await services.groups.heartbeat(group_id, body["member_id"], body["member_epoch"],
                                             body["subscribed_topics"], _pairs(body["owned"]),
                                             body.get("client", ("", "")))
    return {"error_code": int(answer.error), "member_id": answer.member_id,
            "member_epoch": answer.member_epoch,
            "heartbeat_interval_ms": answer.heartbeat_interval_ms,
            "assignment": None if answer.assignment is None else by_topic(answer.assignment)}


def _member(member: MemberView) -> dict:
    return {"member_id": member.member_id, "member_epoch": member.member_epoch,
            "state": member.state, "subscribed_topics": list(member.subscribed_topics),
            "assigned": by_topic(member.assigned), "revoking": by_topic(member.revoking),
            "target": by_topic(member.target), "client_id": member.client_id,
            "client_host": member.client_host}


def _unserved(group_id: str, code: ErrorCode) -> dict:
    return {"group_id": group_id, "error_code": int(code), "state": "DEAD", "group_epoch": -1,
            "assignment_epoch": -1, "assignor": "", "members": []}


def _describe(services: GroupApis, group_id: str) -> dict:
    """The group as ``groups.catalog`` sees it (the view ListGroups lists)."""
    view = services.group_catalog.describe(group_id)
    if view is None:
        return _unserved(group_id, ErrorCode.GROUP_ID_NOT_FOUND)
    return {"group_id": group_id, "error_code": 0, "state": view.state,
            "group_epoch": view.group_epoch, "assignment_epoch": view.assignment_epoch,
            "assignor": view.assignor, "members": [_member(m) for m in view.members]}


def handle_consumer_group_describe(services: GroupApis, body: dict) -> dict:
    code = coordinator_problem(services)
    if code:
        return {"groups": [_unserved(group_id, code) for group_id in body["groups"]]}
    return {"groups": [_describe(services, group_id) for group_id in body["groups"]]}


def handle_list_groups(services: GroupApis, body: dict) -> dict:
    """Every group ``groups.catalog`` knows (tslog's, Kafka's classic groups with their state
    names, e.g. PREPARING_REBALANCE, and groups that only have committed offsets: Empty, 0
    members), sorted by id; ``states`` (if given) keeps only groups in one of them."""
    code = coordinator_problem(services)
    if code:
        return {"error_code": int(code), "groups": []}
    states = None if body["states"] is None else {state.upper() for state in body["states"]}
    return {"error_code": 0, "groups": [
        {"group_id": view.group_id, "state": view.state, "members": view.member_count}
        for view in services.group_catalog.list_groups()
        if states is None or view.state in states]}


async def delete_group(services: GroupApis, group_id: str) -> ErrorCode:
    """Delete the group's coordinator state, then all its committed offsets (NONE);
    NON_EMPTY_GROUP while it has members, of either protocol, and GROUP_ID_NOT_FOUND if
    ``group_catalog`` does not know it, both changing nothing. The group's offset lock is held
    throughout, so a commit waits and lands after the delete, never in between. A failed
    offset delete answers KAFKA_STORAGE_ERROR; the group then has offsets only, and a retry
    deletes them. An empty classic group is forgotten last, so it is listed no more."""
    async with services.offsets.group_lock(group_id):
        view = services.group_catalog.describe(group_id)
        if view is not None and view.kind == CLASSIC and view.members:
            return ErrorCode.NON_EMPTY_GROUP
        code = await services.groups.delete_group(group_id)
        if code is ErrorCode.GROUP_ID_NOT_FOUND and view is not None:
            code = ErrorCode.NONE  # a classic or offsets-only group: nothing of tslog's
        if code is not ErrorCode.NONE:
            return code
        if services.offsets.has_offsets(group_id):
            try:
                await services.offsets.forget_group(group_id)
            except OSError as exc:
                log.error("deleting the committed offsets of group %r failed: %r",
                          group_id, exc)
                return ErrorCode.KAFKA_STORAGE_ERROR
        services.classic_groups.forget(group_id)
        forget_group(group_id)
        return ErrorCode.NONE


async def handle_delete_groups(services: GroupApis, body: dict) -> dict:
    code = coordinator_problem(services)
    if code:
        return {"results": [{"group_id": group_id, "error_code": int(code)}
                            for group_id in body["groups"]]}
    results = []
    for group_id in body["groups"]:
        code = await delete_group(services, group_id)
        results.append({"group_id": group_id, "error_code": int(code)})
    return {"results": results}
