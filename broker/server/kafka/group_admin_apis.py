"""Kafka's ListGroups, DescribeGroups and DeleteGroups on the Kafka listener: what
``kafka-consumer-groups --list/--describe/--delete`` (Kafka's Admin client) asks for.

Each translates Kafka's body into the group service's typed request (``groups/api.py``),
once, and its typed results into Kafka's answer; ``services.group_api`` is the service or,
with the authorizer on, the connection's ``GatedGroups`` (``security/group_gate.py``), the
gate tslog's own ListGroups, ConsumerGroupDescribe and DeleteGroups pass: the same ACL
checks (Describe on a group to see it, Delete to delete it; ListGroups hides what may not
be described unless the principal may describe the cluster), each denial counted once in
``tslog_denied_requests_total``. The service reads the one view of a group
(``groups.catalog``) for both ports, so both list and describe every group alike, whichever
protocol its members speak, and deletes a group the same way.

A group of tslog's own protocol (KIP-848, ``ConsumerGroupHeartbeat`` on tslog's port) is
listed with type "Consumer", as Kafka 4 lists its consumer-protocol groups, and described in
DescribeGroups' classic shape: protocol type "consumer", the assignor as the protocol, each
member's subscription and partitions as Kafka's consumer protocol bytes (Kafka 4 answers
GROUP_ID_NOT_FOUND there and describes such a group with ConsumerGroupDescribe, which this
listener does not serve; an admin client would then list a group it cannot describe).
"""

from __future__ import annotations

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ...groups.catalog import CONSUMER, GroupView, MemberView
from ...groups.consumer_protocol import encode_assignment, encode_subscription
from ...groups.requests import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_NOT_FOUND = int(ErrorCode.GROUP_ID_NOT_FOUND)
_UNKNOWN_OPERATIONS = -2147483648  # Kafka's "not asked for" authorized operations
_DESCRIBE_GROUPS = 15  # Kafka's api key (tslog's protocol has ConsumerGroupDescribe)


def kafka_state(name: str) -> str:
    """tslog's state names (``PREPARING_REBALANCE``, ``EMPTY``) as Kafka writes them
    (``PreparingRebalance``, ``Empty``)."""
    return "".join(word.capitalize() for word in name.split("_"))


# ------------------------------------------------------------------------------ ListGroups


def list_groups(services: KafkaServices, body: dict, version: int,
                info: KafkaRequestInfo) -> dict:
    states = body.get("states_filter") or None
    types = frozenset(t.lower() for t in body.get("types_filter") or ()) or None
    listed = services.group_api.list_groups(ListGroupsRequest(
        None if states is None else frozenset(_native_state(s) for s in states), types))
    return {"throttle_time_ms": 0, "error_code": listed.error_code, "groups": [
        {"group_id": view.group_id, "protocol_type": view.protocol_type,
         "group_state": kafka_state(view.state),
         "group_type": "Consumer" if view.kind == CONSUMER else "Classic"}
        for view in listed.groups]}


def _native_state(kafka_name: str) -> str:
    """``PreparingRebalance`` -> ``PREPARING_REBALANCE`` (the native filter's spelling)."""
    out = "".join(f"_{c}" if c.isupper() else c for c in kafka_name).lstrip("_")
    return out.upper()


# -------------------------------------------------------------------------- DescribeGroups


def describe_groups(services: KafkaServices, body: dict, version: int,
                    info: KafkaRequestInfo) -> dict:
    results = services.group_api.describe_groups(
        DescribeGroupsRequest(body["groups"], _DESCRIBE_GROUPS))
    return {"throttle_time_ms": 0, "groups": [
        _described(group_id, code, view, version)
        for group_id, (code, view) in zip(body["groups"], results)]}


def _described(group_id: str, code: int, view: GroupView | None, version: int) -> dict:
    answer = {"error_code": code, "error_message": None, "group_id": group_id,
              "group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": [],
              "authorized_operations": _UNKNOWN_OPERATIONS}
    if view is not None:
        answer.update(group_state=kafka_state(view.state), protocol_type=view.protocol_type,
                      protocol_data=view.assignor if view.members else "",
                      members=[_member(view, m) for m in view.members])
    elif code == _NOT_FOUND and version >= 6:  # Kafka 4: an error from v6, "Dead" before
        answer["error_message"] = f"Group {group_id} not found."
    elif code == _NOT_FOUND:
        answer["error_code"] = 0
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
    """The group service's delete, as on tslog's port: NON_EMPTY_GROUP while the group has
    members of either protocol (as Kafka refuses a classic group with members), else its
    state, offsets and, for a classic group, the group itself go, so ListGroups stops
    listing it."""
    codes = await services.group_api.delete_groups(DeleteGroupsRequest(body["groups_names"]))
    return {"throttle_time_ms": 0, "results": [
        {"group_id": group_id, "error_code": code}
        for group_id, code in zip(body["groups_names"], codes)]}


GROUP_ADMIN_ADAPTERS = {
    ApiKey.LIST_GROUPS: list_groups,
    _DESCRIBE_GROUPS: describe_groups,
    ApiKey.DELETE_GROUPS: delete_groups,
}
