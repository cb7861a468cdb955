"""Handlers of the consumer-group APIs (KIP-848's protocol): FindCoordinator,
ConsumerGroupHeartbeat, ConsumerGroupDescribe, ListGroups, DeleteGroups.

All of them (and OffsetCommit and OffsetFetch, in ``handlers.py``) are the group service's
(``groups/api.py``): each handler takes ``(groups, body)``, where ``groups`` is the broker's
``GroupApi`` or, with the authorizer on, the connection's ``GatedGroups`` in front of it
(``security/group_gate.py``), translates the body into the service's typed request once and
the typed results back into the response body. The Kafka port's adapters
(``kafka/group_admin_apis.py``, ``kafka/group_apis.py``) call the same service, so the rules
(placement, the one view of a group, what a delete removes) are written once, there.

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
COORDINATOR_NOT_AVAILABLE while it is still loading the groups' state (``GroupApi.placement``).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode

from ..groups.catalog import MemberView
from ..groups.consumer_protocol import by_topic
from ..groups.requests import (
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
)

_GROUP_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
_NOT_AVAILABLE = int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
_CONSUMER_GROUP_DESCRIBE = 69


def _pairs(groups) -> list[tuple[str, int]] | None:
    if groups is None:
        return None
    return [(group["topic"], partition) for group in groups for partition in group["partitions"]]


def handle_find_coordinator(groups, body: dict) -> dict:
    """Each key's coordinator at its tslog address; COORDINATOR_NOT_AVAILABLE while no
    controller is elected (or it has not registered)."""
    found = groups.find_coordinator(FindCoordinatorRequest(body["keys"]))
    brokers = found.cluster.brokers()
    coordinators = []
    for key, each in zip(body["keys"], found.coordinators):
        if each.error_code == _GROUP_DENIED:
            coordinators.append({"key": key, "node_id": -1, "host": "", "port": 0,
                                 "error_code": _GROUP_DENIED})
            continue
        address = brokers.get(each.node_id)
        node_id, (host, port) = (each.node_id, address) if address is not None else (-1, ("", 0))
        coordinators.append({"key": key, "node_id": node_id, "host": host, "port": port,
                             "error_code": each.error_code or (0 if address is not None
                                                               else _NOT_AVAILABLE)})
    return {"coordinators": coordinators}


async def handle_consumer_group_heartbeat(groups, body: dict) -> dict:
    # "client": (client id, host), put in by the connection from the request's header and
    # its peer address (the wire's body has no such field).
    answer = await groups.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
        body["group_id"], body["member_id"], body["member_epoch"], body["subscribed_topics"],
        _pairs(body["owned"]), body.get("client", ("", ""))))
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


def _described(group_id: str, code: int, view) -> dict:
    """One group of ConsumerGroupDescribe's answer: its view, or an error in the shape each
    error had (a denied group's state is empty, an unserved one's DEAD)."""
    if view is not None:
        return {"group_id": group_id, "error_code": 0, "state": view.state,
                "group_epoch": view.group_epoch, "assignment_epoch": view.assignment_epoch,
                "assignor": view.assignor, "members": [_member(m) for m in view.members]}
    return {"group_id": group_id, "error_code": code,
            "state": "" if code == _GROUP_DENIED else "DEAD", "group_epoch": -1,
            "assignment_epoch": -1, "assignor": "", "members": []}


def handle_consumer_group_describe(groups, body: dict) -> dict:
    """Each group as ``groups.catalog`` sees it (the view ListGroups lists)."""
    results = groups.describe_groups(DescribeGroupsRequest(body["groups"],
                                                           _CONSUMER_GROUP_DESCRIBE))
    return {"groups": [_described(group_id, code, view)
                       for group_id, (code, view) in zip(body["groups"], results)]}


def handle_list_groups(groups, body: dict) -> dict:
    """Every group ``groups.catalog`` knows (tslog's, Kafka's classic groups with their state
    names, e.g. PREPARING_REBALANCE, and groups that only have committed offsets: Empty, 0
    members), sorted by id; ``states`` (if given) keeps only groups in one of them."""
    states = body["states"]
    listed = groups.list_groups(ListGroupsRequest(
        None if states is None else frozenset(state.upper() for state in states)))
    return {"error_code": listed.error_code, "groups": [
        {"group_id": view.group_id, "state": view.state, "members": view.member_count}
        for view in listed.groups]}


async def handle_delete_groups(groups, body: dict) -> dict:
    """Each group deleted (``GroupApi.delete_group``: NON_EMPTY_GROUP while it has members
    of either protocol, GROUP_ID_NOT_FOUND for a group no one knows)."""
    codes = await groups.delete_groups(DeleteGroupsRequest(body["groups"]))
    return {"results": [{"group_id": group_id, "error_code": code}
                        for group_id, code in zip(body["groups"], codes)]}
