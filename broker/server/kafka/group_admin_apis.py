"""Kafka's ListGroups, DescribeGroups and DeleteGroups on the Kafka listener: what
``kafka-consumer-groups --list/--describe/--delete`` (Kafka's Admin client) asks for.

ListGroups and DeleteGroups go to the native handlers (gated: the same ACL rules, the same
listing, the same delete). ListGroups and DescribeGroups read the one view of a group
(``groups.catalog``) that tslog's own ListGroups and ConsumerGroupDescribe read, so both
ports list and describe every group alike, whichever protocol its members speak.

A group of tslog's own protocol (KIP-848, ``ConsumerGroupHeartbeat`` on tslog's port) is
listed with type "Consumer", as Kafka 4 lists its consumer-protocol groups, and described in
DescribeGroups' classic shape: protocol type "consumer", the assignor as the protocol, each
member's subscription and partitions as Kafka's consumer protocol bytes (Kafka 4 answers
GROUP_ID_NOT_FOUND there and describes such a group with ConsumerGroupDescribe, which this
listener does not serve; an admin client would then list a group it cannot describe).
"""

from __future__ import annotations

import inspect

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ...groups.catalog import CONSUMER, GroupView, MemberView
from ...groups.consumer_protocol import encode_assignment, encode_subscription
from ..group_handlers import coordinator_problem
from .group_apis import group_allowed
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_NOT_FOUND = int(ErrorCode.GROUP_ID_NOT_FOUND)
_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
_UNKNOWN_OPERATIONS = -2147483648  # Kafka's "not asked for" authorized operations
_DESCRIBE_GROUPS = 15  # Kafka's api key (tslog's protocol has ConsumerGroupDescribe)


def kafka_state(name: str) -> str:
    """tslog's state names (``PREPARING_REBALANCE``, ``EMPTY``) as Kafka writes them
    (``PreparingRebalance``, ``Empty``)."""
    return "".join(word.capitalize() for word in name.split("_"))


# ------------------------------------------------------------------------------ ListGroups


async def _native(services: KafkaServices, api_key: int, body: dict) -> dict:
    """The (gated) native handler's answer, awaited if it is awaitable."""
    answer = services.native[api_key](body)
    return (await answer) if inspect.isawaitable(answer) else answer


async def list_groups(services: KafkaServices, body: dict, version: int,
                      info: KafkaRequestInfo) -> dict:
    states = body.get("states_filter") or None
    types = {t.lower() for t in body.get("types_filter") or ()}
    native = await _native(services, ApiKey.LIST_GROUPS, {
        "states": None if states is None else [_native_state(s) for s in states]})
    views = {view.group_id: view for view in services.catalog.list_groups()}
    groups = []
    for group in native.get("groups", ()):
        view = views.get(group["group_id"])
        if view is None:
            continue
        kind = "Consumer" if view.kind == CONSUMER else "Classic"
        if types and kind.lower() not in types:
            continue
        groups.append({"group_id": view.group_id, "protocol_type": view.protocol_type,
                       "group_state": kafka_state(view.state), "group_type": kind})
    return {"throttle_time_ms": 0, "error_code": int(native.get("error_code", 0)),
            "groups": groups}


def _native_state(kafka_name: str) -> str:
    """``PreparingRebalance`` -> ``PREPARING_REBALANCE`` (the native filter's spelling)."""
    out = "".join(f"_{c}" if c.isupper() else c for c in kafka_name).lstrip("_")
    return out.upper()


# -------------------------------------------------------------------------- DescribeGroups


def describe_groups(services: KafkaServices, body: dict, version: int,
                    info: KafkaRequestInfo) -> dict:
    placement = int(coordinator_problem(services))
    return {"throttle_time_ms": 0, "groups": [
        _described(services, info, group_id, version, placement)
        for group_id in body["groups"]]}


def _described(services: KafkaServices, info: KafkaRequestInfo, group_id: str, version: int,
               placement: int) -> dict:
    answer = {"error_code": 0, "error_message": None, "group_id": group_id,
              "group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": [],
              "authorized_operations": _UNKNOWN_OPERATIONS}
    if placement:
        answer["error_code"] = placement
    elif not group_allowed(services, info, _DESCRIBE_GROUPS, group_id):
        answer["error_code"] = _DENIED
    else:
        view = services.catalog.describe(group_id)
        if view is not None:
            answer.update(group_state=kafka_state(view.state),
                          protocol_type=view.protocol_type,
                          protocol_data=view.assignor if view.members else "",
                          members=[_member(view, m) for m in view.members])
        elif version >= 6:  # Kafka 4: an unknown group is an error from v6, "Dead" before
            answer.update(error_code=_NOT_FOUND, error_message=f"Group {group_id} not found.")
    return answer


def _member(view: GroupView, member: MemberView) -> dict:
    """A member in DescribeGroups' shape. A classic member's bytes are its own (Kafka hands
    out assignments only once the group is stable); a KIP-848 member's are written from
    what the coordinator knows (its subscribed topics, the partitions it owns now)."""
    if view.kind == CONSUMER:
        metadata = encode_subscription(member.subscribed_topics)
        assignment = encode_assignment(member.assigned)
    else:
        metadata = member.metadata
        assignment = member.assignment if view.state == "STABLE" else b""
    return {"member_id": member.member_id, "group_instance_id": None,
            "client_id": member.client_id, "client_host": f"/{member.client_host}",
            "member_metadata": metadata, "member_assignment": assignment}


# ---------------------------------------------------------------------------- DeleteGroups


async def delete_groups(services: KafkaServices, body: dict, version: int,
                        info: KafkaRequestInfo) -> dict:
    """The native delete, gated as on tslog's port: NON_EMPTY_GROUP while the group has
    members of either protocol (as Kafka refuses a classic group with members), else its
    state, offsets and, for a classic group, the group itself go, so ListGroups stops
    listing it."""
    native = await _native(services, ApiKey.DELETE_GROUPS, {"groups": body["groups_names"]})
    codes = {r["group_id"]: int(r["error_code"]) for r in native.get("results", ())}
    return {"throttle_time_ms": 0, "results": [
        {"group_id": g, "error_code": codes.get(g, int(native.get("error_code", _NOT_FOUND)))}
        for g in body["groups_names"]]}


GROUP_ADMIN_ADAPTERS = {
    ApiKey.LIST_GROUPS: list_groups,
    _DESCRIBE_GROUPS: describe_groups,
    ApiKey.DELETE_GROUPS: delete_groups,
}
