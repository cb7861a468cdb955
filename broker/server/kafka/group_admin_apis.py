"""Kafka's ListGroups, DescribeGroups and DeleteGroups on the Kafka listener: what
``kafka-consumer-groups --list/--describe/--delete`` (Kafka's Admin client) asks for.

ListGroups and DeleteGroups go to the native handlers (gated: the same ACL rules, the same
listing of tslog's groups, Kafka's classic groups and groups that only have committed
offsets; the same delete). DescribeGroups reads the classic groups' state machine, which
keeps what Kafka's answer carries (state, protocol, each member's client id, host,
subscription and assignment), and the committed offsets.

Groups of tslog's own protocol (KIP-848, ``ConsumerGroupHeartbeat`` on tslog's port) are
listed with type "Consumer", as Kafka 4 lists its consumer-protocol groups; DescribeGroups
answers GROUP_ID_NOT_FOUND for them with a message, as Kafka 4 does for a group that is not
classic (``tslog groups describe`` shows them).
"""

from __future__ import annotations

import inspect

from tslog.protocol.errors import ErrorCode
from tslog.protocol.messages import ApiKey

from ..group_handlers import coordinator_problem
from .request_info import KafkaRequestInfo
from .services import KafkaServices

_NOT_FOUND = int(ErrorCode.GROUP_ID_NOT_FOUND)
_DENIED = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
_UNKNOWN_OPERATIONS = -2147483648  # Kafka's "not asked for" authorized operations


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
    classic = {group_id: services.classic.describe(group_id)
               for group_id, _, _ in services.classic.listings()}
    native_members = _native_member_counts(services)
    groups = []
    for group in native.get("groups", ()):
        group_id = group["group_id"]
        described = classic.get(group_id)
        kind = "Consumer" if native_members.get(group_id) else "Classic"
        if types and kind.lower() not in types:
            continue
        protocol_type = "consumer"
        if kind == "Classic" and described is not None and described.protocol_type:
            protocol_type = described.protocol_type
        groups.append({"group_id": group_id, "protocol_type": protocol_type,
                       "group_state": kafka_state(group["state"]), "group_type": kind})
    return {"throttle_time_ms": 0, "error_code": int(native.get("error_code", 0)),
            "groups": groups}


def _native_state(kafka_name: str) -> str:
    """``PreparingRebalance`` -> ``PREPARING_REBALANCE`` (the native filter's spelling)."""
    out = "".join(f"_{c}" if c.isupper() else c for c in kafka_name).lstrip("_")
    return out.upper()


def _native_member_counts(services: KafkaServices) -> dict[str, int]:
    """Group id -> member count of tslog's own (KIP-848) groups."""
    coordinator = services.groups.coordinator
    if coordinator is None:
        return {}
    return {listing.group_id: listing.member_count for listing in coordinator.list_groups()}


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
    authorizer = services.authorizer
    if placement:
        answer["error_code"] = placement
    elif authorizer is not None and not authorizer.authorize(
            info.principal, "Describe", "group", group_id, info.client_host):
        answer["error_code"] = _DENIED
    elif _native_member_counts(services).get(group_id):
        answer.update(error_code=_NOT_FOUND, error_message=f"Group {group_id} is not a "
                      "classic group: it uses tslog's consumer protocol (tslog groups describe)")
    elif services.classic.has_members(group_id):
        _describe_classic(services, group_id, answer)
    elif services.offsets.has_offsets(group_id) or group_id in {
            listed for listed, _, _ in services.classic.listings()}:
        described = services.classic.describe(group_id)
        answer.update(group_state="Empty",
                      protocol_type=described.protocol_type or "consumer")
    elif version >= 6:  # Kafka 4: an unknown group is an error from v6, "Dead" before
        answer.update(error_code=_NOT_FOUND,
                      error_message=f"Group {group_id} not found.")
    return answer


def _describe_classic(services: KafkaServices, group_id: str, answer: dict) -> None:
    described = services.classic.describe(group_id)
    stable = described.state.name == "STABLE"
    answer.update(
        group_state=kafka_state(described.state.name),
        protocol_type=described.protocol_type or "",
        protocol_data=described.protocol_name or "",
        members=[{"member_id": m.member_id, "group_instance_id": None,
                  "client_id": m.client_id, "client_host": f"/{m.client_host}",
                  "member_metadata": m.metadata,
                  # Kafka hands out assignments only once the group is stable
                  "member_assignment": m.assignment if stable else b""}
                 for m in described.members])


# ---------------------------------------------------------------------------- DeleteGroups


async def delete_groups(services: KafkaServices, body: dict, version: int,
                        info: KafkaRequestInfo) -> dict:
    """The native delete (offsets and tslog's group state; NON_EMPTY_GROUP while tslog's
    members are active), refused first for a classic group with members, as Kafka does; a
    deleted classic group is forgotten, so ListGroups stops listing it."""
    busy = [g for g in body["groups_names"] if services.classic.has_members(g)]
    asked = [g for g in body["groups_names"] if g not in busy]

    def finish(native: dict) -> dict:
        codes = {r["group_id"]: int(r["error_code"]) for r in native.get("results", ())}
        codes.update({g: int(ErrorCode.NON_EMPTY_GROUP) for g in busy})
        for group_id, code in codes.items():
            if code == 0:
                services.classic.forget(group_id)
            elif code == _NOT_FOUND and services.classic.forget(group_id):
                codes[group_id] = 0  # a classic group that never committed an offset
        return {"throttle_time_ms": 0, "results": [
            {"group_id": g, "error_code": codes.get(g, _NOT_FOUND)}
            for g in body["groups_names"]]}

    return finish(await _native(services, ApiKey.DELETE_GROUPS, {"groups": asked})
                  if asked else {})


GROUP_ADMIN_ADAPTERS = {
    ApiKey.LIST_GROUPS: list_groups,
    15: describe_groups,  # DescribeGroups (tslog's protocol has ConsumerGroupDescribe)
    ApiKey.DELETE_GROUPS: delete_groups,
}
